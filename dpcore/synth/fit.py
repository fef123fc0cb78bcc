"""The model fit and the row sampling of a synthetic release, in numpy (post-processing: they read the noisy
marginals and the fitted model, never a row).

OpenDP's generators fit a graphical model to the noisy marginals with Private-PGM's ``mirror_descent`` (1,000 steps
with an Armijo line search; McKenna, Sheldon & Miklau 2019, Algorithm 1) and accept any function with its signature
as ``estimator`` (OpenDP's ``Algorithm.estimator``: "any function matching the signature of ``mirror_descent`` can be
used"). In a profile of a warm release of the story's five columns, Private-PGM's version spent most of its time
compiling: its jitted step closes over the noisy values, and MST's tree differs from one release to the next, so jax
compiles ~5 s of CPU per fit, for 0.2 s of running. :func:`mirror_descent` here is the same algorithm — the same loss
(half the squared, noise-scaled error of every measured marginal), the same first step (2 / (L · total), L the
Lipschitz constant of the loss's gradient, which Private-PGM's power iteration from the all-ones vector converges to
and :func:`_lipschitz` gives exactly), the same line search and number of steps — with the model's marginals computed
by message passing on Private-PGM's junction tree in numpy (:class:`Tree`): no compiling, and its results agree
with Private-PGM's to 1e-5 of a count or better (``tests/dpcore/synth/test_fit.py``).

The model it returns answers any other marginal by variable elimination (:class:`Model`, :class:`Engine`: AIM's and
MST's scores ask for marginals the model has no factor for, which Private-PGM answers with small eager jax
operations), and :func:`sample` draws rows
from it as Private-PGM's ``synthetic_data(method="sample")`` does, with a numpy generator.
"""

from __future__ import annotations

import functools
import string
from typing import Any

import numpy as np

ITERS = 1_000  # Private-PGM's default for mirror descent: the same fit, not a shorter one
_MAX_FACTORS = len(string.ascii_letters)  # einsum names one axis per column


class Unsupported(Exception):
    """A fit this module does not do (a query other than a whole marginal, too many columns): Private-PGM's then."""


# --- the model's marginals --------------------------------------------------------------------------------------


class Engine:
    """Marginals of ``exp(Σ θ_c)`` over any set of columns: one einsum over the factors (each shifted by its maximum:
    the shift cancels when the marginal is scaled to the total), its contraction order planned once per output."""

    def __init__(self, attrs: tuple, sizes: dict, cliques: tuple):
        if len(attrs) > _MAX_FACTORS:
            raise Unsupported(f"{len(attrs)} columns")
        self.attrs, self.sizes, self.cliques = tuple(attrs), dict(sizes), tuple(tuple(c) for c in cliques)
        letter = {a: string.ascii_letters[i] for i, a in enumerate(self.attrs)}
        self._letter = letter
        self._inputs = ",".join("".join(letter[a] for a in c) for c in self.cliques)
        self._paths: dict[tuple, Any] = {}

    def factors(self, theta: list[np.ndarray]) -> list[np.ndarray]:
        return [np.exp(t - t.max()) for t in theta]

    def marginal(self, factors: list[np.ndarray], out: tuple, total: float) -> np.ndarray:
        expr = self._paths.get(out)
        if expr is None:  # opt_einsum (jax's dependency): the contraction order planned once, then pairwise BLAS
            # lazy: opt_einsum, only for a synthetic release
            import opt_einsum

            spec = self._inputs + "->" + "".join(self._letter[a] for a in out)
            expr = self._paths[out] = opt_einsum.contract_expression(
                spec, *[f.shape for f in factors], optimize="greedy"
            )
        r = expr(*factors)
        z = float(r.sum())
        if not np.isfinite(z) or z <= 0:
            raise Unsupported("the model's factors underflow")
        return r * (total / z)


@functools.lru_cache(maxsize=64)
def _engine(attrs: tuple, sizes: tuple, cliques: tuple) -> Engine:
    return Engine(attrs, dict(sizes), cliques)


def _engine_for(domain, cliques) -> Engine:
    return _engine(tuple(domain.attrs), tuple(zip(domain.attrs, domain.shape)), tuple(tuple(c) for c in cliques))


def _arrays(vector) -> tuple[tuple, list[np.ndarray]]:
    """A CliqueVector's cliques and float64 arrays, axes in each clique's order."""
    cliques = tuple(tuple(c) for c in vector.cliques)
    out = []
    for c in cliques:
        f = vector.arrays[c]
        a = np.asarray(f.values, dtype=np.float64)
        order = tuple(f.domain.attrs)
        out.append(a if order == c else np.transpose(a, [order.index(x) for x in c]))
    return cliques, out


class Tree:
    """The marginals of every potential clique at once, by sum-product message passing on Private-PGM's junction tree
    of those cliques (``mbi.junction_tree``), in numpy: each maximal clique's factor ``exp(ψ − max ψ)``, messages
    over the separators (each scaled to its maximum), beliefs, then each clique's marginal scaled to the total. What
    a fit asks for at every step: about one contraction per message and per clique, where :class:`Engine` eliminates
    every variable again for each clique."""

    def __init__(self, domain, cliques: tuple):
        from mbi import junction_tree  # jax underneath: loaded with a release
        from mbi.clique_utils import clique_mapping

        self.cliques = tuple(tuple(c) for c in cliques)
        sizes = dict(zip(domain.attrs, domain.shape))
        if len(domain.attrs) > _MAX_FACTORS:
            raise Unsupported(f"{len(domain.attrs)} columns")
        letter = {a: string.ascii_letters[i] for i, a in enumerate(domain.attrs)}
        jtree = junction_tree.make_junction_tree(domain, list(self.cliques))[0]
        self.maximal = [tuple(c) for c in junction_tree.maximal_cliques(jtree)]
        order = [(tuple(a), tuple(b)) for a, b in junction_tree.message_passing_order(jtree)]
        home = clique_mapping(self.maximal, list(self.cliques), domain=domain)
        self._home = [self.maximal.index(tuple(home[c])) for c in self.cliques]
        # each potential clique broadcast into its maximal clique's axes
        self._into = []
        for c, m in zip(self.cliques, self._home):
            mc = self.maximal[m]
            kept = [a for a in mc if a in c]
            self._into.append((m, [c.index(a) for a in kept], [sizes[a] if a in c else 1 for a in mc]))
        self._shapes = [[sizes[a] for a in mc] for mc in self.maximal]
        index = {mc: i for i, mc in enumerate(self.maximal)}
        self._messages = []  # (from, to, einsum spec, incoming message numbers)
        seps = {}
        for k, (i, j) in enumerate(order):
            sep = tuple(a for a in i if a in j)
            seps[(i, j)] = (k, sep)
        for i, j in order:
            sep = seps[(i, j)][1]
            incoming = [seps[(h, g)][0] for (h, g) in order if g == i and h != j]
            spec = ",".join(
                ["".join(letter[a] for a in i)] + ["".join(letter[a] for a in seps[order[n]][1]) for n in incoming]
            )
            self._messages.append((index[i], spec + "->" + "".join(letter[a] for a in sep), incoming))
        self._beliefs = []
        for mc in self.maximal:
            incoming = [seps[(h, g)][0] for (h, g) in order if g == mc]
            spec = ",".join(
                ["".join(letter[a] for a in mc)] + ["".join(letter[a] for a in seps[order[n]][1]) for n in incoming]
            )
            self._beliefs.append((spec + "->" + "".join(letter[a] for a in mc), incoming))
        self._out = []
        for c, m in zip(self.cliques, self._home):
            mc = self.maximal[m]
            self._out.append("".join(letter[a] for a in mc) + "->" + "".join(letter[a] for a in c))

    def marginals(self, theta: list[np.ndarray], total: float) -> list[np.ndarray]:
        psi = [np.zeros(s) for s in self._shapes]
        for t, (m, perm, shape) in zip(theta, self._into):
            psi[m] = psi[m] + np.transpose(t, perm).reshape(shape)
        phi = [np.exp(p - p.max()) for p in psi]
        msgs: list[np.ndarray] = []
        for i, spec, incoming in self._messages:
            msg = np.einsum(spec, phi[i], *[msgs[n] for n in incoming])
            top = msg.max()
            if not np.isfinite(top) or top <= 0:
                raise Unsupported("the model's factors underflow")
            msgs.append(msg / top)
        out = []
        for m, spec_c in zip(self._home, self._out):
            spec, incoming = self._beliefs[m]
            belief = np.einsum(spec, phi[m], *[msgs[n] for n in incoming])
            mu = np.einsum(spec_c, belief)
            z = float(mu.sum())
            if not np.isfinite(z) or z <= 0:
                raise Unsupported("the model's factors underflow")
            out.append(mu * (total / z))
        return out


@functools.lru_cache(maxsize=64)
def _tree(attrs: tuple, shape: tuple, cliques: tuple) -> Tree:
    from mbi import Domain  # jax underneath: loaded with a release

    return Tree(Domain(attrs, shape), cliques)


# --- the fit -----------------------------------------------------------------------------------------------------


def _expand(cliques: tuple, theta: list[np.ndarray], new: list, domain) -> list[np.ndarray]:
    """Private-PGM's ``CliqueVector.expand`` in numpy: each old factor added into the new clique that supports it
    (``reverse_clique_mapping``: the smallest), the others zero; the distribution is unchanged."""
    from mbi.clique_utils import reverse_clique_mapping  # jax underneath: loaded with a release

    sizes = dict(zip(domain.attrs, domain.shape))
    mapping = reverse_clique_mapping(list(new), list(cliques), domain=domain)
    by_clique = dict(zip(cliques, theta))
    out = []
    for cl in new:
        acc = np.zeros([sizes[a] for a in cl])
        for old in mapping[cl]:
            a = by_clique[tuple(old)]
            shape = [sizes[x] if x in old else 1 for x in cl]
            order = [x for x in cl if x in old]
            acc = acc + np.transpose(a, [tuple(old).index(x) for x in order]).reshape(shape)
        out.append(acc)
    return out


def _assign(cliques: tuple, measurements, sizes: dict) -> list[tuple]:
    """Each measurement on the first potential clique that holds it (Private-PGM's ``CliqueVector.project``):
    (clique index, axes summed out, axis order, noisy values shaped as the clique, noise scale)."""
    from mbi import Factor  # jax underneath: loaded with a release

    out = []
    for m in measurements:
        if m.query is not Factor.datavector and m.query != Factor.datavector:
            raise Unsupported("a partial query")
        c = tuple(m.clique)
        j = next(i for i, pc in enumerate(cliques) if set(c) <= set(pc))
        kept = [a for a in cliques[j] if a in c]
        axes = tuple(k for k, a in enumerate(cliques[j]) if a not in c)
        perm = tuple(kept.index(a) for a in c)
        y = np.asarray(m.noisy_measurement, dtype=np.float64).reshape([sizes[a] for a in c])
        out.append((j, axes, perm, y, max(float(m.stddev), 1e-12)))
    return out


def _lipschitz(cliques: tuple, assigned: list[tuple], sizes: dict) -> float:
    """The largest eigenvalue of the loss's Hessian: it is block-diagonal by clique, and in a block the all-ones
    vector is an eigenvector of every measurement's term with that term's largest eigenvalue (cells summed into one
    measured cell / σ²), so the block's is their sum. Private-PGM's power iteration starts from that vector."""
    per_block: dict[int, float] = {}
    for j, axes, _perm, _y, s in assigned:
        summed = float(np.prod([sizes[cliques[j][k]] for k in axes])) if axes else 1.0
        per_block[j] = per_block.get(j, 0.0) + summed / s**2
    return max(per_block.values())


class Loss:
    """The loss as one sparse matrix over the cliques' marginals laid end to end: ``A`` maps them to every
    measurement's cells divided by its noise scale, so the loss is ``½‖A·μ − y/σ‖²`` and its gradient ``Aᵀ(A·μ − y/σ)``
    — the same numbers as summing each measurement's term, in two sparse products instead of a Python loop."""

    def __init__(self, cliques: tuple, assigned: list[tuple], shapes: list[tuple]):
        from scipy import sparse  # lazy: scipy's sparse is needed only when a release fits its model

        self.shapes = shapes
        self.offsets = np.cumsum([0, *(int(np.prod(s)) for s in shapes)])
        rows, cols, vals, ys, start = [], [], [], [], 0
        for j, axes, perm, y, s in assigned:
            kept = [k for k in range(len(shapes[j])) if k not in axes]
            idx = np.indices(shapes[j]).reshape(len(shapes[j]), -1)  # each cell's index along each axis
            kept_sizes = [shapes[j][k] for k in kept]
            # the measured cell of each clique cell, in the measurement's own axis order (perm)
            order = [kept[q] for q in perm]  # the measurement's axis t is the clique's axis kept[perm[t]]
            cell = np.ravel_multi_index([idx[k] for k in order], [shapes[j][k] for k in order]) if kept else 0
            cell = np.broadcast_to(cell, idx.shape[1]) if not kept else cell
            rows.append(start + cell)
            cols.append(self.offsets[j] + np.arange(idx.shape[1]))
            vals.append(np.full(idx.shape[1], 1.0 / s))
            ys.append(np.ravel(y) / s)
            start += int(np.prod(kept_sizes)) if kept else 1
        self.a = sparse.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(start, int(self.offsets[-1]))
        )
        self.at = self.a.T.tocsr()
        self.y = np.concatenate(ys)

    def flat(self, arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([x.ravel() for x in arrays])

    def value(self, mu_flat: np.ndarray) -> tuple[float, np.ndarray]:
        d = self.a @ mu_flat - self.y
        return 0.5 * float(d @ d), d

    def gradient(self, d: np.ndarray) -> list[np.ndarray]:
        g = self.at @ d
        return [g[a:b].reshape(s) for a, b, s in zip(self.offsets[:-1], self.offsets[1:], self.shapes)]


def fit_arrays(engine: Tree, theta: list[np.ndarray], assigned: list[tuple], total: float, sizes: dict, iters: int):
    """Mirror descent in numpy (Private-PGM's loop): returns the potentials and the marginals of every clique."""
    cliques = engine.cliques
    loss = Loss(cliques, assigned, [tuple(t.shape) for t in theta])
    alpha = 2.0 / (_lipschitz(cliques, assigned, sizes) * total)
    mu = loss.flat(engine.marginals(theta, total))
    for _ in range(iters):
        value, d = loss.value(mu)
        grad = loss.gradient(d)
        theta2 = [t - alpha * g for t, g in zip(theta, grad)]
        mu2 = loss.flat(engine.marginals(theta2, total))
        value2, _ = loss.value(mu2)
        if value - value2 >= 0.5 * alpha * float(loss.flat(grad) @ (mu - mu2)):
            theta, mu, alpha = theta2, mu2, 1.01 * alpha
        else:
            alpha *= 0.5
    marg = [mu[a:b].reshape(s) for a, b, s in zip(loss.offsets[:-1], loss.offsets[1:], loss.shapes)]
    return theta, marg


def mirror_descent(domain, loss_fn, *, potentials=None, iters: int = ITERS) -> Any:
    """Private-PGM's ``mirror_descent`` on a list of ``LinearMeasurement`` (OpenDP's estimator signature), in numpy.
    Returns a :class:`Model` (a ``MarkovRandomField``); anything it does not do goes to Private-PGM's own."""
    from mbi.clique_utils import maximal_subset  # jax underneath: loaded with a release
    from mbi.estimation import minimum_variance_unbiased_total
    from mbi.estimation import mirror_descent as pgm_mirror_descent

    measurements = list(loss_fn) if isinstance(loss_fn, (list, tuple)) else []
    try:
        if not measurements:
            raise Unsupported("no measurement list")
        total = float(minimum_variance_unbiased_total(measurements))
        loss_cliques = maximal_subset([tuple(m.clique) for m in measurements])
        sizes = dict(zip(domain.attrs, domain.shape))
        if potentials is None:
            cliques, theta = tuple(loss_cliques), [np.zeros([sizes[a] for a in c]) for c in loss_cliques]
        else:
            cliques, theta = _arrays(potentials)
            if not all(potentials.supports(cl) for cl in loss_cliques):
                cliques, theta = tuple(loss_cliques), _expand(cliques, theta, loss_cliques, domain)
        engine = _tree(tuple(domain.attrs), tuple(domain.shape), cliques)
        theta, mu = fit_arrays(engine, theta, _assign(cliques, measurements, sizes), total, sizes, int(iters))
    except Unsupported:
        return pgm_mirror_descent(domain, loss_fn, potentials=potentials)
    return _model(domain, cliques, theta, mu, total)


# --- the fitted model --------------------------------------------------------------------------------------------


def _vector(domain, cliques: tuple, arrays: list[np.ndarray]):
    import jax.numpy as jnp  # jax underneath: loaded with a release
    from mbi import Factor
    from mbi.clique_vector import CliqueVector

    return CliqueVector(
        domain,
        list(cliques),
        {c: Factor(domain.project(c), jnp.asarray(a)) for c, a in zip(cliques, arrays)},
    )


@functools.lru_cache(maxsize=1)  # one class, made once
def _model_class():
    from mbi import Factor, MarkovRandomField  # jax underneath: loaded with a release

    class Model(MarkovRandomField):
        """Private-PGM's ``MarkovRandomField`` whose marginals outside its factors come from :class:`Engine`."""

        def project(self, attrs):
            attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
            if self.marginals.supports(attrs):
                return self.marginals.project(attrs)
            # lazy: jax takes ~2 s to import
            import jax.numpy as jnp

            return Factor(self.domain.project(attrs), jnp.asarray(marginal(self, attrs)))

    return Model


def _model(domain, cliques: tuple, theta: list[np.ndarray], mu: list[np.ndarray], total: float):
    return _model_class()(
        potentials=_vector(domain, cliques, theta), marginals=_vector(domain, cliques, mu), total=total
    )


def marginal(model, attrs) -> np.ndarray:
    """The model's marginal over ``attrs`` (counts summing to its total), in numpy, axes in ``attrs``' order."""
    cliques, theta = _arrays(model.potentials)
    engine = _engine_for(model.domain, cliques)
    return engine.marginal(engine.factors(theta), tuple(attrs), float(model.total))


def pair_marginal(model, pair) -> np.ndarray:
    """The model's marginal on ``pair`` (MST's scores): an outer product when every factor is one-way, else
    :func:`marginal`; Private-PGM's projection when neither applies."""
    if isinstance(model, _model_class()):
        return marginal(model, pair)
    if all(len(c) <= 1 for c in model.cliques):
        a = np.asarray(model.project((pair[0],)).values, dtype=np.float64)
        b = np.asarray(model.project((pair[1],)).values, dtype=np.float64)
        return np.outer(a, b) / max(float(model.total), 1e-300)
    try:
        return marginal(model, pair)
    except Unsupported:
        return np.asarray(model.project(tuple(pair)).values)


# --- drawing rows ------------------------------------------------------------------------------------------------


def sample(model, rows: int, rng: np.random.Generator, notes: list[str] | None = None) -> dict[str, np.ndarray]:
    """``rows`` rows drawn independently from the model (Private-PGM's ``synthetic_data(method="sample")``: columns
    in reverse elimination order, each from its conditional given the columns drawn before it that share a factor
    with it), as {column: codes}.

    Two guards, both post-processing (they read the model, never a row). A conditional with no finite, positive
    mass (its parents' values underflowed in the model's factors) is never searched: ``np.searchsorted`` on NaN
    gives the first category and on zeros the last, for every row of that group (issue 32: a GBSG2 release once
    drew horTh "no" for every row). Such rows are drawn from the column's own marginal instead and ``notes`` says
    how many. And each column's draw is checked against the model's own 1-way marginal (every category within
    :data:`DRAW_CHECK_SE` standard errors, plus one row): a draw that fails it is a sampler defect, not chance
    (under 1e-6 per release), and raises :class:`Unsupported` so Private-PGM's sampler draws instead."""
    from mbi import junction_tree  # jax underneath: loaded with a release

    domain = model.domain
    cliques = [set(c) for c in model.cliques]
    _jtree, elimination = junction_tree.make_junction_tree(domain, [tuple(c) for c in cliques])
    data: dict[str, np.ndarray] = {}
    used: list[str] = []
    stray = 0
    for col in elimination[::-1]:
        parents = [a for a in used if any(col in c and a in c for c in cliques)]
        k = domain[col]
        own = _shares(marginal(model, (col,)).reshape(k))
        joint = marginal(model, (*parents, col)).reshape(-1, k) if parents else own.reshape(1, k)
        if parents:
            flat = np.ravel_multi_index([data[p] for p in parents], [domain[p] for p in parents])
        else:
            flat = np.zeros(rows, dtype=np.int64)
        cdf = np.cumsum(joint, axis=1)
        mass = cdf[:, -1]
        ok = np.isfinite(cdf).all(axis=1) & (mass > 0)
        cdf = np.where(ok[:, None], cdf / np.where(ok, mass, 1.0)[:, None], np.cumsum(own)[None, :])
        u = rng.random(rows)
        out = np.empty(rows, dtype=np.int64)
        order = np.argsort(flat, kind="stable")
        groups, starts = np.unique(flat[order], return_index=True)
        ends = np.append(starts[1:], rows)
        for g, a, b in zip(groups, starts, ends):
            idx = order[a:b]
            stray += 0 if ok[g] else len(idx)
            out[idx] = np.minimum(np.searchsorted(cdf[g], u[idx], side="right"), k - 1)
        _check_draw(col, out, own)
        data[col] = out
        used.append(col)
    if stray and notes is not None:
        notes.append(
            f"{stray:,} drawn values came from their column's own distribution: the model gave their other "
            "columns' values no weight (its factors underflowed)"
        )
    return data


#: How many standard errors a category's drawn share may be from the model's before the draw is called wrong.
DRAW_CHECK_SE = 6.0


def _shares(counts: np.ndarray) -> np.ndarray:
    counts = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    z = float(counts.sum())
    if not np.isfinite(z) or z <= 0:
        raise Unsupported("the model's factors underflow")
    return counts / z


def _check_draw(col: str, codes: np.ndarray, want: np.ndarray) -> None:
    """Raise :class:`Unsupported` when ``codes``' shares of each category are not within :data:`DRAW_CHECK_SE`
    standard errors (plus one row) of the model's ``want``: a defect of the draw, never chance."""
    n = len(codes)
    if n == 0:
        return
    got = np.bincount(codes, minlength=len(want))[: len(want)] / n
    slack = DRAW_CHECK_SE * np.sqrt(want * (1 - want) / n) + 1.0 / n
    if np.any(np.abs(got - want) > slack):
        raise Unsupported(f"the rows drawn for {col} do not follow the model's own distribution of it")
