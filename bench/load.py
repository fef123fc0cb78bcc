"""Many viewers at once: concurrent sessions moving the noise page's ε slider, on 127.0.0.1 only.

Each simulated viewer speaks Streamlit's own websocket protocol (/_stcore/stream, the same protobuf
messages a browser sends): it opens the noise page, then moves the ε slider every 0.3–1.0 s (seeded
"think time", a workshop audience rather than a synchronised robot), and times each rerun from the
message it sends to the server's "script finished". Meanwhile /_stcore/health is polled every 0.25 s.

``--join`` (issue 32): N browser-like visitors join at the same moment on a fresh server — each fetches the page's
HTML and its scripts and styles as an empty-cache browser does, opens the websocket and asks for the noise page —
against one visitor alone on a fresh server, ``--repeat`` times each: the median and slowest health-check latency and
time to the first chart (the first Plotly chart message), with the lone visitor's and their ratios. Targets: slowest
health check < 1 s, slowest first chart <= 3 × the lone visitor's (quiet 2-core machine). ``--py-spy FILE`` records
the server with py-spy during one joining round (FILE.svg: a flame graph; FILE.txt: collapsed stacks per thread) to
see where it blocks; ``--after S``: the visitors arrive S s after the server started.

Otherwise, first, for each of a few links, N visitors open it at once on a fresh server (``--cold``): their first runs
and the slowest health check meanwhile. Then: median (and 90th percentile) rerun with 1 session and with N sessions, their ratio, the
slowest health check, and the server's CPU time per rerun and resident memory before and after (the app
turns off Streamlit's full garbage collection after every run: memory must stay flat without it). Targets: 20 sessions' median ≤ 4 × one session's; health < 1 s.

    .venv/bin/python bench/load.py [--sessions 20] [--moves 10] [--seconds 120] [--root DIR] [--quick]
    .venv/bin/python bench/load.py --join [--sessions 20] [--repeat 3] [--after 0.5] [--link noise] [--py-spy F.txt]

Bounded: at most 50 sessions, every phase has a deadline, the server it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path

from browser import ROOT, load_average, server

MAX_SESSIONS = 50
BROWSER_CONNECTIONS = 6  # HTTP/1.1 connections a browser opens to one host
SLIDER_LABEL = "privacy budget ε (log scale)"
EPS_PATH = ["0.7", "0.5", "0.3", "0.2", "0.15", "0.1", "0.15", "0.2", "0.3", "0.5", "0.7", "1.0", "1.5", "2.0", "1.5"]


def _find_slider_id(msg) -> str | None:
    if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
        return None
    el = msg.delta.new_element
    if el.WhichOneof("type") == "slider" and el.slider.label == SLIDER_LABEL:
        return el.slider.id
    return None


class Viewer:
    def __init__(self, url: str, seed: int):
        self.url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.rng = random.Random(seed)
        self.start = self.rng.randrange(len(EPS_PATH))
        self.times: list[float] = []
        self.slider_id: str | None = None

    async def _rerun(self, ws, eps: str | None) -> float:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.page_name = "noise"
        if eps is not None:
            w = msg.rerun_script.widget_states.widgets.add()
            w.id = self.slider_id
            w.string_array_value.data.append(eps)
        t0 = time.perf_counter()
        await ws.send(msg.SerializeToString())
        return await self._until_finished(ws, t0)

    async def _until_finished(self, ws, t0: float) -> float:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        while True:
            raw = await ws.recv()
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            sid = _find_slider_id(fm)
            if sid:
                self.slider_id = sid
            if fm.WhichOneof("type") == "script_finished":
                return time.perf_counter() - t0

    async def run(self, moves: int, deadline: float) -> None:
        from websockets.asyncio.client import connect

        async with connect(self.url, subprotocols=["streamlit"], max_size=64 << 20, compression=None) as ws:
            await self._rerun(ws, None)  # opening the page (may run app.py's navigation first)
            for _ in range(3):
                if self.slider_id:
                    break
                await self._rerun(ws, None)
            if not self.slider_id:
                raise RuntimeError("no ε slider found on the noise page")
            await asyncio.sleep(self.rng.uniform(0.0, 1.0))
            for i in range(moves):
                if time.perf_counter() > deadline:
                    break
                eps = EPS_PATH[(self.start + i) % len(EPS_PATH)]
                self.times.append(await self._rerun(ws, eps))
                await asyncio.sleep(self.rng.uniform(0.3, 1.0))


_HEALTH_POLLER = """
import sys, time, urllib.request
url = sys.argv[1]
while True:
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=30) as r:
            r.read()
        dt = time.perf_counter() - t
    except OSError:  # a failed health check counts as the timeout
        dt = 30.0
    print(dt, flush=True)
    time.sleep(0.25)
"""


async def _health(url: str, stop: asyncio.Event, out: list[float]) -> None:
    """/_stcore/health every 0.25 s from a process of its own (this one's threads and event loop, busy with the
    visitors, must not delay the checks or their clocks): each latency into ``out``."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HEALTH_POLLER, url, stdout=asyncio.subprocess.PIPE
    )
    try:
        while not stop.is_set():
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), 0.2)
            except TimeoutError:
                continue
            if line:
                out.append(float(line))
    finally:
        proc.kill()
        rest, _ = await proc.communicate()
        out.extend(float(x) for x in rest.split())


async def _open(url: str, link: str) -> float:
    """One new visitor opening ``link`` (page?query): seconds until its first script run finished."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    async with connect(
        url.replace("http://", "ws://") + "/_stcore/stream",
        subprotocols=["streamlit"],
        max_size=64 << 20,
        compression=None,
    ) as ws:
        msg = BackMsg()
        page, _, query = link.partition("?")
        msg.rerun_script.page_name, msg.rerun_script.query_string = page, query
        t0 = time.perf_counter()
        await ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await ws.recv())
            if fm.WhichOneof("type") == "script_finished":
                return time.perf_counter() - t0


async def cold_opens(url: str, link: str, sessions: int, seconds: float) -> tuple[list[float], list[float]]:
    """``sessions`` visitors opening the same link at once on a server nobody has visited yet (the health
    check must not stall while their first runs execute)."""
    stop, health = asyncio.Event(), []
    h = asyncio.create_task(_health(url, stop, health))
    try:
        firsts = await asyncio.wait_for(asyncio.gather(*(_open(url, link) for _ in range(sessions))), seconds)
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        await h
    return list(firsts), health


async def phase(url: str, sessions: int, moves: int, seconds: float) -> tuple[list[float], list[float]]:
    deadline = time.perf_counter() + seconds
    viewers = [Viewer(url, seed=i) for i in range(sessions)]
    stop, health = asyncio.Event(), []
    h = asyncio.create_task(_health(url, stop, health))
    try:
        await asyncio.wait_for(asyncio.gather(*(v.run(moves, deadline) for v in viewers)), seconds + 60)
    finally:
        stop.set()
        await h
    return [t for v in viewers for t in v.times], health


def _assets(url: str) -> list[str]:
    """What an empty-cache browser fetches before the app runs: the page, its module script, modulepreloads and
    styles (Streamlit's index.html names them)."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"{url}/", timeout=60) as r:
        html = r.read().decode()
    refs = re.findall(r'<(?:script[^>]*\bsrc|link[^>]*\bhref)="\./(static/[^"]+)"', html)
    return [f"{url}/{ref}" for ref in dict.fromkeys(refs)]


def _fetch(urls: list[str]) -> int:
    """Fetch ``urls`` over one kept-alive connection, as a browser does (HTTP/1.1), gzip accepted. Bytes read."""
    import http.client
    from urllib.parse import urlsplit

    if not urls:
        return 0
    where = urlsplit(urls[0])
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=120)
    got = 0
    try:
        for u in urls:
            conn.request("GET", urlsplit(u).path, headers={"Accept-Encoding": "gzip"})
            resp = conn.getresponse()
            got += len(resp.read())
    finally:
        conn.close()
    return got


async def _join(url: str, link: str, assets: list[str], go: asyncio.Event, pool) -> dict:
    """One browser-like visitor: at ``go``, fetch the assets, open the websocket, ask for ``link``. Seconds from
    ``go`` to the first chart message and to the end of the first run."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    await go.wait()
    t0 = time.perf_counter()
    loop = asyncio.get_running_loop()
    # six kept-alive connections per visitor, as a browser opens to one host; all visitors at once
    await asyncio.gather(
        *(loop.run_in_executor(pool, _fetch, assets[i::BROWSER_CONNECTIONS]) for i in range(BROWSER_CONNECTIONS))
    )
    t_assets = time.perf_counter() - t0
    chart = None
    async with connect(
        url.replace("http://", "ws://") + "/_stcore/stream",
        subprotocols=["streamlit"],
        max_size=64 << 20,
        compression=None,
    ) as ws:
        msg = BackMsg()
        page, _, query = link.partition("?")
        msg.rerun_script.page_name, msg.rerun_script.query_string = page, query
        await ws.send(msg.SerializeToString())
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(await ws.recv())
            kind = fm.WhichOneof("type")
            if (
                chart is None
                and kind == "delta"
                and fm.delta.WhichOneof("type") == "new_element"
                and fm.delta.new_element.WhichOneof("type") == "plotly_chart"
            ):
                chart = time.perf_counter() - t0
            if kind == "script_finished":
                done = time.perf_counter() - t0
                return {"assets": t_assets, "chart": chart if chart is not None else done, "done": done}


async def joining(
    url: str, link: str, sessions: int, seconds: float, *, assets: bool = True, after: float = 0.5
) -> tuple[list[dict], list[float]]:
    """``sessions`` visitors joining at the same moment (one asyncio event releases them all); ``assets``: each
    fetches the page's scripts and styles first, as a browser with an empty cache does."""
    from concurrent.futures import ThreadPoolExecutor

    assets = await asyncio.to_thread(_assets, url) if assets else []
    stop, health, go = asyncio.Event(), [], asyncio.Event()
    h = asyncio.create_task(_health(url, stop, health))
    pool = ThreadPoolExecutor(sessions * BROWSER_CONNECTIONS)
    try:
        tasks = [asyncio.create_task(_join(url, link, assets, go, pool)) for _ in range(sessions)]
        await asyncio.sleep(after)  # health checks of the idle server first (and its start-up work, if any)
        go.set()
        out = await asyncio.wait_for(asyncio.gather(*tasks), seconds)
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        await h
        pool.shutdown(wait=False)
    return list(out), health


def _py_spy(pid: int, path: str):
    """py-spy recording the server: every thread (named in each stack), idle ones too, so that the event loop's
    thread shows whether it waits for work, for the GIL or on something it runs itself."""
    import shutil
    import subprocess

    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return subprocess.Popen(
        [
            exe,
            "record",
            "--pid",
            str(pid),
            "--output",
            path,
            "--format",
            "raw" if path.endswith(".txt") else "flamegraph",  # raw: collapsed stacks, one line each, to grep
            "--rate",
            "50",
            "--idle",
            "--threads",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def join_main(args, n: int) -> None:
    link = args.link
    lone, many = [], []
    for r in range(max(1, args.repeat)):
        for count, into in ((1, lone), (n, many)):
            with server(args.root) as (url, _, pid):
                spy = _py_spy(pid, args.py_spy) if args.py_spy and count == n and r == 0 else None
                firsts, hc = asyncio.run(
                    joining(url, link, count, args.seconds, assets=not args.no_assets, after=args.after)
                )
                if spy is not None:
                    spy.send_signal(2)  # SIGINT: py-spy writes its flame graph and exits
                    spy.wait(60)
            into.append(
                {
                    "chart_median": statistics.median(f["chart"] for f in firsts),
                    "chart_max": max(f["chart"] for f in firsts),
                    "assets_max": max(f["assets"] for f in firsts),
                    "health_median": statistics.median(hc),
                    "health_max": max(hc),
                    "checks": len(hc),
                    "load": load_average(),
                }
            )
            x = into[-1]
            print(
                f"round {r + 1}: {count:2d} visitor{'s' if count > 1 else ' '} join /{link} {args.after:g} s after a fresh server started: first chart "
                f"median {x['chart_median']:.2f} s, slowest {x['chart_max']:.2f} s (assets slowest {x['assets_max']:.2f} "
                f"s); health check median {x['health_median'] * 1e3:.0f} ms, slowest {x['health_max'] * 1e3:.0f} ms "
                f"({x['checks']} checks); load average {x['load']}"
            )

    def med(rows, key):
        return statistics.median(x[key] for x in rows)

    one_chart, many_chart = med(lone, "chart_max"), med(many, "chart_max")
    print(f"medians over {len(many)} rounds:")
    print(
        f"  1 visitor:  first chart {one_chart:.2f} s; health check median {med(lone, 'health_median') * 1e3:.0f} ms, "
        f"slowest {med(lone, 'health_max') * 1e3:.0f} ms"
    )
    print(
        f"  {n} visitors: first chart median {med(many, 'chart_median'):.2f} s, slowest {many_chart:.2f} s; health check "
        f"median {med(many, 'health_median') * 1e3:.0f} ms, slowest {med(many, 'health_max') * 1e3:.0f} ms"
    )
    print(
        f"  ratios {n} / 1: slowest first chart {many_chart / one_chart:.1f}x (target <= 3x), median first chart "
        f"{med(many, 'chart_median') / one_chart:.1f}x; slowest health check "
        f"{med(many, 'health_max') / med(lone, 'health_max'):.1f}x (target: < 1000 ms, here "
        f"{med(many, 'health_max') * 1e3:.0f} ms)"
    )
    print(f"load average after: {load_average()}" + (f"; py-spy flame graph: {args.py_spy}" if args.py_spy else ""))


def _server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of the server process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _p90(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, int(0.9 * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--moves", type=int, default=10, help="slider moves per session (default 10)")
    ap.add_argument("--seconds", type=float, default=120, help="deadline per phase (default 120 s)")
    ap.add_argument("--root", type=Path, default=ROOT, help="app checkout to measure (default: this one)")
    ap.add_argument(
        "--cold",
        nargs="*",
        default=["", "noise", "reidentification", "differencing", "advisor"],
        help="links (page?query) that N visitors open at once on a fresh server first",
    )
    ap.add_argument("--join", action="store_true", help="N visitors join at once vs one alone (issue 32)")
    ap.add_argument("--link", default="noise", help="with --join: the page they open (default noise)")
    ap.add_argument("--repeat", type=int, default=3, help="with --join: rounds, each on fresh servers (default 3)")
    ap.add_argument("--no-assets", action="store_true", help="with --join: websocket only (no page or scripts fetched)")
    ap.add_argument(
        "--after",
        type=float,
        default=0.5,
        help="with --join: seconds between the server answering and the visitors joining (default 0.5; an "
        "operator who starts the server before the audience arrives: 15)",
    )
    ap.add_argument(
        "--py-spy", default=None, metavar="FILE", help="with --join: record the server with py-spy (.svg/.txt)"
    )
    ap.add_argument(
        "--quick", action="store_true", help="2 sessions, 2 moves, Home opened cold (--join: 1 round): a smoke test"
    )
    args = ap.parse_args()
    if args.quick:
        args.sessions, args.moves, args.cold, args.repeat = 2, 2, [""], 1
    n = max(1, min(args.sessions, MAX_SESSIONS))
    print(f"app: {args.root}   load average before: {load_average()}")
    if args.join:
        join_main(args, n)
        return
    for link in args.cold:
        with server(args.root) as (url, _, pid):
            firsts, hc = asyncio.run(cold_opens(url, link, n, args.seconds))
        print(
            f"{n} visitors open /{link} at once on a fresh server: first run median "
            f"{statistics.median(firsts):.2f} s, slowest {max(firsts):.2f} s; health check slowest "
            f"{max(hc) * 1e3:.0f} ms ({len(hc)} checks)   target < 1000 ms"
        )
    with server(args.root) as (url, _, pid):
        asyncio.run(phase(url, 1, 3, args.seconds))  # warm caches the way a first visitor would
        rss0, c0 = _server_rss_mib(pid), _server_cpu_s(pid)
        one, h1 = asyncio.run(phase(url, 1, args.moves, args.seconds))
        c1 = _server_cpu_s(pid)
        many, hn = asyncio.run(phase(url, n, args.moves, args.seconds))
        c2, rss1 = _server_cpu_s(pid), _server_rss_mib(pid)
    m1, mn = statistics.median(one), statistics.median(many)
    print(f"1 session:   median rerun {m1 * 1e3:7.0f} ms   p90 {_p90(one) * 1e3:7.0f} ms   ({len(one)} moves)")
    print(f"{n} sessions: median rerun {mn * 1e3:7.0f} ms   p90 {_p90(many) * 1e3:7.0f} ms   ({len(many)} moves)")
    print(f"ratio {n} sessions / 1: {mn / m1:.1f}x   target ≤ 4x")
    print(
        f"health check with {n} sessions: median {statistics.median(hn) * 1e3:.0f} ms, "
        f"slowest {max(hn) * 1e3:.0f} ms ({len(hn)} checks)   target < 1000 ms"
    )
    print(
        f"server CPU per rerun: {(c1 - c0) / max(1, len(one)) * 1e3:.0f} ms (1 session), "
        f"{(c2 - c1) / max(1, len(many)) * 1e3:.0f} ms ({n} sessions)"
    )
    print(f"server memory: {rss0:.0f} MiB after warm-up, {rss1:.0f} MiB after {len(one) + len(many)} more reruns")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
