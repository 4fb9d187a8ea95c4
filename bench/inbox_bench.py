"""Inbox benchmark: first-page render with 10,000 pending interrupts, and the
time from an interrupt's commit to its row arriving at 50 connected websocket clients.

    python bench/inbox_bench.py [--pending 10000] [--clients 50] [--interrupts 100]
                                [--teams 20] [--db sqlite|postgres]

Runs on the embedded settings (SQLite file in a temporary folder, in-memory channel
layer, in-process tasks), as ``make run`` serves them, with ``DEBUG=0``; ``--db postgres``
puts the database on PostgreSQL (``forge_bench_inbox`` on 127.0.0.1, made anew):

1. Render: 10,000 pending interrupts (one run each, across graphs, namespaces and
   sub-agents) are inserted; a logged-in reviewer GETs ``/`` (the whole page: filters,
   count, first 50 rows) through Django's full request stack, in process. Reported:
   median and p95 over the timed requests, after warm-up.
   With ``--teams N`` the pending interrupts are spread over N teams (``FORGE_TEAMS``,
   rows stamped as ``assign_teams`` stamps them) and the page is read by a member of one
   team (``team00:reviewer``): the inbox then holds that team's share. Also reported: the
   filtered first page's own queries (50 rows and the count), and rows of other teams
   the page showed (must be 0).
2. Push: daphne serves the same database; 50 websocket clients, each a reviewer of their
   own, connect as a browser would (session cookie, same-origin ``Origin``) and send their
   catch-up cursor. Runs of ``transfer`` are started through the API one after another;
   each pauses at an interrupt inside daphne's task pool. Latency = arrival of the row at
   a client minus the commit of the interrupt (the ``interrupt.created`` event row's
   ``created_at``, stamped in the ``on_commit`` hook right after the commit). Reported:
   p50, p95, max over every (client, interrupt) pair. With teams, the clients are
   reviewers of team 0 only, and ``transfer`` belongs to their team.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
PG_DB = os.environ.get("FORGE_BENCH_DB", "forge_bench_inbox")
ROW = re.compile(r'<tr id="int-([0-9a-f]+)" class="row')
GRAPHS = [("transfer", [], "ask"), ("supervisor", ["research_agent"], "find_sources"),
          ("supervisor", ["writer_agent"], "draft"),
          ("nested", ["team_agent", "specialist_agent"], "investigate")]


def team_name(n: int) -> str:
    return f"team{n:02d}"


def teams_setting(teams: int) -> str:
    """N teams; the first owns ``transfer`` (the push part's runs), the rest graphs of
    their own (the seeded rows are stamped directly)."""
    return json.dumps({team_name(n): {"graphs": ["transfer" if n == 0 else f"{team_name(n)}/*"]}
                       for n in range(teams)})


def database_url(db: str, folder: Path) -> str:
    if db == "sqlite":
        return f"sqlite:///{folder / 'bench.sqlite3'}"
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}"')
        conn.execute(f'CREATE DATABASE "{PG_DB}"')
    return f"postgresql://postgres@127.0.0.1:5432/{PG_DB}"


def drop_database() -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{PG_DB}"')


def configure(folder: Path, db: str = "sqlite", teams: int = 0) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="forgeui.settings", DEBUG="0", LOG_LEVEL="WARNING",
               DATABASE_URL=database_url(db, folder), PYTHONPATH=str(ROOT),
               FORGE_TEAMS=teams_setting(teams) if teams else "{}",
               ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
               # Production settings over plain HTTP on loopback, with static files
               # collected into the bench's own folder (whitenoise serves the manifest).
               SECURE_SSL_REDIRECT="0", STATIC_ROOT=str(folder / "static"))
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(40))
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("collectstatic", interactive=False, verbosity=0)
    return env


def seed(pending: int, teams: int = 0) -> None:
    """``pending`` paused runs, each with one pending interrupt, inserted in bulk; with
    teams, run ``n`` and its interrupt belong to team ``n % teams``."""
    from django.core.management import call_command
    from django.utils import timezone

    from forgeui.models import Interrupt, Run

    call_command("migrate", verbosity=0)
    with open(os.devnull, "w") as quiet:
        # DEBUG=0: demo makes its accounts only when forced, with generated passwords (the
        # bench logs in with force_login and a token, never a password).
        call_command("demo", no_runs=True, force=True, stdout=quiet)
    now = timezone.now()
    runs, interrupts = [], []
    for n in range(pending):
        graph, path, node = GRAPHS[n % len(GRAPHS)]
        run_id, thread = f"{n:032x}", f"bench-{n}"
        team = team_name(n % teams) if teams else ""
        runs.append(Run(run_id=run_id, thread_id=thread, root_thread_id=thread, graph=graph,
                        namespace=[graph, *path], sub_agent_id=path[-1] if path else "",
                        status="interrupted", latest_checkpoint_id=f"cp-{n}",
                        created_at=now, updated_at=now, team=team))
        interrupts.append(Interrupt(
            id=f"{n:032x}", run_id=run_id, thread_id=thread, root_thread_id=thread, node=node,
            task_id=f"task-{n}", namespace=[graph, *path], sub_agent_id=path[-1] if path else "",
            checkpoint_id=f"cp-{n}", created_at=now - timezone.timedelta(seconds=n), team=team,
            payload={"question": f"Approve request #{n}?", "amount": n,
                     "actions": ["accept", "edit", "respond", "ignore"]}))
    Run.objects.bulk_create(runs, batch_size=2000)
    Interrupt.objects.bulk_create(interrupts, batch_size=2000)
    if teams:
        member_of(team_name(0))
    from django.db import connection

    with connection.cursor() as cursor:  # the planner's statistics, as autovacuum keeps them
        cursor.execute("ANALYZE")


def member_of(team: str) -> str:
    """A reviewer of ``team`` only; their username."""
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(f"{team}-reviewer")
    user.groups.add(Group.objects.get_or_create(name=f"{team}:reviewer")[0])
    return user.get_username()


def reader(teams: int) -> str:
    return f"{team_name(0)}-reviewer" if teams else "reviewer"


def push_readers(teams: int, count: int) -> list[str]:
    """One reviewer per client (one person may hold only so many sockets), of team 0 when
    there are teams; their usernames."""
    from django.contrib.auth.models import Group, User

    group = Group.objects.get_or_create(
        name=f"{team_name(0)}:reviewer" if teams else "reviewer")[0]
    names = []
    for n in range(count):
        user = User.objects.get_or_create(username=f"bench-reader-{n}")[0]
        user.groups.add(group)
        names.append(user.get_username())
    return names


def bench_query(repeat: int, username: str) -> dict[str, float]:
    """The inbox's own two reads for ``username``, in its default order (deadline): the
    first 50 rows of their teams and their count."""
    from django.contrib.auth.models import User

    from forgeui.inbox.rows import InboxFilters
    from forgeui.models import Interrupt
    from forgeui.team.assignment import Viewer

    user = User.objects.get(username=username)
    timings = []
    for n in range(repeat + 5):
        begun = time.perf_counter()
        found = InboxFilters().apply(Interrupt.objects.visible_to(user), Viewer.of(user))
        rows, total = list(found[:50]), found.count()
        if n >= 5:
            timings.append((time.perf_counter() - begun) * 1000)
    return {"median_ms": statistics.median(timings), "rows": len(rows), "count": total}


def foreign_rows(html: str, teams: int) -> int:
    """Rows on the page of a team other than the reader's (team 0)."""
    return sum(1 for found in ROW.findall(html) if teams and int(found, 16) % teams)


def bench_render(repeat: int, username: str = "reviewer", teams: int = 0) -> dict[str, float]:
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username=username))
    for _ in range(5):
        assert client.get("/").status_code == 200
    timings = []
    for _ in range(repeat):
        begun = time.perf_counter()
        response = client.get("/")
        timings.append((time.perf_counter() - begun) * 1000)
        assert response.status_code == 200 and len(ROW.findall(response.content.decode())) == 50
    return {"median_ms": statistics.median(timings),
            "p95_ms": statistics.quantiles(timings, n=20)[18], "requests": repeat,
            "foreign_rows": foreign_rows(response.content.decode(), teams)}


def session_cookie(username: str = "reviewer") -> str:
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username=username))
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def start_daphne(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "forgeui.asgi:application"], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=1)
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("daphne did not start")


async def client(url: str, origin: str, cookie: str, arrivals: dict[str, float],
                 connected: list[int], total: int, all_in: asyncio.Event) -> None:
    import websockets

    async with websockets.connect(url, origin=origin, max_size=None,
                                  additional_headers={"Cookie": f"sessionid={cookie}"}) as ws:
        await ws.send(json.dumps({"after": 10**12}))  # nothing to catch up on
        connected.append(1)
        if len(connected) == total:
            all_in.set()
        async for frame in ws:
            now = time.time()
            for interrupt_id in ROW.findall(str(frame)):
                arrivals.setdefault(interrupt_id, now)


def api_start(base: str, token: str) -> str:
    request = urllib.request.Request(
        f"{base}/api/runs", method="POST", data=json.dumps({"graph": "transfer"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["thread_id"])


def api_token(username: str) -> str:
    from django.contrib.auth.models import User

    from forgeui.models import ApiToken

    return ApiToken.objects.issue(User.objects.get(username=username), name="bench")[1]


async def bench_push(port: int, cookies: list[str], token: str, interrupts: int,
                     gap: float) -> dict[str, float]:
    from forgeui.models import Event, Interrupt

    base, origin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}"
    clients = len(cookies)
    arrivals: list[dict[str, float]] = [{} for _ in range(clients)]
    connected: list[int] = []
    all_in = asyncio.Event()
    tasks = [asyncio.create_task(client(f"ws://127.0.0.1:{port}/ws/inbox/", origin, cookie,
                                        arrivals[n], connected, clients, all_in))
             for n, cookie in enumerate(cookies)]
    await asyncio.wait_for(all_in.wait(), 30)
    threads = []
    for _ in range(interrupts):
        threads.append(await asyncio.to_thread(api_start, base, token))
        await asyncio.sleep(gap)
    await asyncio.sleep(1.5)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    committed = await asyncio.to_thread(lambda: {
        interrupt_id: created.timestamp()
        for interrupt_id, created in Event.objects.filter(
            kind="interrupt.created",
            interrupt_id__in=Interrupt.objects.filter(root_thread_id__in=threads).values("id"),
        ).values_list("interrupt_id", "created_at")})
    latencies = [(seen[i] - at) * 1000 for seen in arrivals for i, at in committed.items()
                 if i in seen]
    expected = len(committed) * clients
    return {"p50_ms": statistics.median(latencies),
            "p95_ms": statistics.quantiles(latencies, n=20)[18], "max_ms": max(latencies),
            "delivered": len(latencies), "expected": expected, "clients": clients,
            "interrupts": len(committed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--interrupts", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between runs")
    parser.add_argument("--renders", type=int, default=50)
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--teams", type=int, default=0, help="spread the pending over N teams")
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--no-push", action="store_true", help="the first page only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = configure(Path(folder), args.db, args.teams)
        seed(args.pending, args.teams)
        found = {"render": report_render(args)}
        if not args.no_push:
            found["push"] = report_push(args, env)
        print(json.dumps(found))
    if args.db == "postgres":
        drop_database()


def report_render(args: argparse.Namespace) -> dict[str, Any]:
    render = bench_render(args.renders, reader(args.teams), args.teams)
    who = f", a member of 1 of {args.teams} teams" if args.teams else ""
    print(f"{args.db}: inbox first page, {args.pending} pending{who}: median "
          f"{render['median_ms']:.1f} ms, p95 {render['p95_ms']:.1f} ms over "
          f"{render['requests']} requests (target: median < 100 ms)")
    if args.teams:
        query = bench_query(args.renders, reader(args.teams))
        print(f"  its queries (50 rows + count of {query['count']}): median "
              f"{query['median_ms']:.2f} ms; rows of other teams on the page: "
              f"{render['foreign_rows']} (must be 0)")
        render["query"] = query
    return render


def report_push(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    server = start_daphne(env, args.port)
    try:
        cookies = [session_cookie(name) for name in push_readers(args.teams, args.clients)]
        push = asyncio.run(bench_push(args.port, cookies, api_token("supervisor"),
                                      args.interrupts, args.gap))
    finally:
        server.terminate()
        server.wait(10)
    print(f"commit -> websocket row, {push['clients']} clients, {push['interrupts']} "
          f"interrupts: p50 {push['p50_ms']:.1f} ms, p95 {push['p95_ms']:.1f} ms, "
          f"max {push['max_ms']:.1f} ms; delivered {push['delivered']}/{push['expected']}"
          f" (target: p95 < 200 ms)")
    return push


if __name__ == "__main__":
    main()
