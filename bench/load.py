"""Many viewers at once: concurrent sessions moving the noise page's ε slider, on 127.0.0.1 only.

Each simulated viewer speaks Streamlit's own websocket protocol (/_stcore/stream, the same protobuf
messages a browser sends): it opens the noise page, then moves the ε slider every 0.3–1.0 s (seeded
"think time", a workshop audience rather than a synchronised robot), and times each rerun from the
message it sends to the server's "script finished". Meanwhile /_stcore/health is polled every 0.25 s.

First, for each of a few links, N visitors open it at once on a fresh server (``--cold``): their first runs
and the slowest health check meanwhile. Then: median (and 90th percentile) rerun with 1 session and with N sessions, their ratio, the
slowest health check, and the server's CPU time per rerun and resident memory before and after (the app
turns off Streamlit's full garbage collection after every run: memory must stay flat without it). Targets: 20 sessions' median ≤ 4 × one session's; health < 1 s.

    .venv/bin/python bench/load.py [--sessions 20] [--moves 10] [--seconds 120] [--root DIR] [--quick]

Bounded: at most 50 sessions, every phase has a deadline, the server it starts is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
from pathlib import Path

from browser import ROOT, load_average, server

MAX_SESSIONS = 50
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


async def _health(url: str, stop: asyncio.Event, out: list[float]) -> None:
    import urllib.request

    def check() -> float:
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=30) as r:
                r.read()
            return time.perf_counter() - t
        except OSError:  # a failed health check counts as the timeout
            return 30.0

    while not stop.is_set():
        out.append(await asyncio.to_thread(check))
        await asyncio.sleep(0.25)


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
    ap.add_argument("--quick", action="store_true", help="2 sessions, 2 moves, Home opened cold: a smoke test")
    args = ap.parse_args()
    if args.quick:
        args.sessions, args.moves, args.cold = 2, 2, [""]
    n = max(1, min(args.sessions, MAX_SESSIONS))
    print(f"app: {args.root}   load average before: {load_average()}")
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
