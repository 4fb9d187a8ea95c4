"""An inbox websocket as a browser tab holds it, for the cluster tests.

``Watcher`` connects with a reviewer's session cookie, records the interrupt rows it is
sent and the last event id, and reconnects from that id as ``forge.js`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import urllib.request
from typing import Any

ROW = re.compile(r'<tr id="int-([0-9a-f]+)"')
CURSOR = re.compile(r'id="inbox-cursor" data-event-id="(\d+)"')
RELOAD = 4409  # forgeui.inbox.frames.RELOAD (this module imports no Django)


class Watcher:
    """A browser tab's inbox socket: rows seen, last event id, reconnects like forge.js.

    Runs on an event loop thread of its own, so test code stays synchronous.
    """

    def __init__(self, url: str, cookie: str, reconnect: bool = False) -> None:
        self.ws_url = url.replace("http://", "ws://") + "/ws/inbox/"
        self.origin, self.cookie, self.reconnect = url, cookie, reconnect
        self.seen: set[str] = set()
        self.cursor = self.page_cursor()
        self.connects = 0
        self.connected = threading.Event()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        started = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(started),),
                                        daemon=True)
        self._thread.start()
        started.wait(5)

    def page_cursor(self) -> int:
        """The event id the inbox page shows now, as a freshly loaded tab starts from."""
        request = urllib.request.Request(self.origin + "/",
                                         headers={"Cookie": f"sessionid={self.cookie}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            found = CURSOR.search(response.read().decode())
        return int(found.group(1)) if found else 0

    async def _main(self, started: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        started.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._follow()

    def saw(self, interrupt_ids: Any) -> bool:
        with self._lock:
            return set(interrupt_ids) <= self.seen

    async def _follow(self) -> None:
        import websockets

        while True:
            try:
                async with websockets.connect(
                        self.ws_url, origin=self.origin, max_size=None,  # type: ignore[arg-type]
                        additional_headers={"Cookie": f"sessionid={self.cookie}"}) as ws:
                    await ws.send(json.dumps({"after": self.cursor}))
                    self.connects += 1
                    self.connected.set()
                    async for frame in ws:
                        self._read(str(frame))
                    if ws.close_code == RELOAD:  # too far behind: forge.js reloads the page
                        self.cursor = await asyncio.to_thread(self.page_cursor)
            except (OSError, websockets.WebSocketException):
                pass
            self.connected.clear()
            if not self.reconnect:
                return
            await asyncio.sleep(0.2)

    def _read(self, frame: str) -> None:
        with self._lock:
            self.seen.update(ROW.findall(frame))
            for found in CURSOR.findall(frame):
                self.cursor = max(self.cursor, int(found))

    def close(self) -> None:
        if self._loop is not None and self._task is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(10)
