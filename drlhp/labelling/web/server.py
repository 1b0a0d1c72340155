"""The labelling page's web server (aiohttp), run on a thread of the preference-interface process.

Every request needs the run's random token -- in the page's address (``?token=``),
the ``X-Drlhp-Token`` header or the cookie the page sets -- compared in constant
time; without it: 403. The owner's page and its data need the owner's token (the
labellers' does not open them; the owner's opens everything). Requests name nothing on disk: the page and its two files
are fixed routes, clips are served by id and only while a pair out with the
labellers shows them. Answers are small JSON bodies checked field by field;
anything else is a 4xx and nothing is stored.

Routes: ``GET /`` (the page), ``GET /static/app.js``, ``GET /static/style.css``,
``GET /api/next?name=`` (the pair to answer, or none yet), ``POST /api/answer``
(``{"pair": id, "label": "L" | "R" | "E" | "skip", "name": ...}``; replies once the
label is journaled, with the next pair), ``POST /api/undo`` (``{"pair": id, "name": ...}``:
take back your latest answer, to pair ``id``; replies once the retraction is journaled, with
that pair to answer again; sent twice, it is taken back once), ``GET /clip/<id>.png``,
``GET /api/episode``, ``GET /episode/<id>.png``; the owner's: ``GET /owner``,
``GET /static/owner.js``, ``GET /api/owner`` (labellers, their pace, agreement).
"""
from __future__ import annotations

import asyncio
import hmac
import os
import re
import threading
from dataclasses import dataclass
from typing import Callable

from aiohttp import web

from drlhp.errors import ConfigError
from drlhp.labelling.answers import CHOICE_VALUES, Choice
from drlhp.labelling.web.clips import ClipImages, sheet_cols
from drlhp.labelling.web.pool import OutPair, PairPool

TOKEN_COOKIE = "drlhp_token"
OWNER_PATHS = ("/owner", "/static/owner.js", "/api/owner")
TOKEN_HEADER = "X-Drlhp-Token"
MAX_BODY_BYTES = 1024  # an answer is ~60 bytes
NAME_PATTERN = re.compile(r"[^\W_][\w .'-]{0,39}")  # letters, digits, spaces and . ' - _; 1-40 characters
ACK_TIMEOUT = 10.0  # seconds an answer may wait to be journaled before the page is told to retry
STATIC_DIR = os.path.join(os.path.dirname(__file__), "static")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the page's address holds the token
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class PageSettings:
    """What the page needs to show clips (frame size, whole-number zoom, frames per second), the task in words,
    and how many answers each labeller may take back."""

    frame_h: int
    frame_w: int
    zoom: int
    fps: float
    instructions: str | None = None
    undo_limit: int = 0


class LabellingServer:
    """The aiohttp application: ``progress()`` gives the run's ``{"total": labels, "remaining": n or None,
    "agreement": Agreement.rows()}``."""

    def __init__(self, pool: PairPool, clips: ClipImages, settings: PageSettings, token: str,
                 progress: Callable[[], dict], owner_token: str) -> None:
        if min(len(token), len(owner_token)) < 16 or token == owner_token:
            raise ConfigError("the tokens must be two long random strings (secrets.token_urlsafe())")
        self.pool, self.clips, self.settings, self.progress = pool, clips, settings, progress
        self._token, self._owner_token = token.encode(), owner_token.encode()
        self._files = {name: open(os.path.join(STATIC_DIR, name), "rb").read()
                       for name in ("index.html", "app.js", "style.css", "owner.html", "owner.js")}
        self.app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY_BYTES)
        self.app.add_routes([
            web.get("/", self._index("index.html")),
            web.get("/static/app.js", self._static("app.js", "text/javascript")),
            web.get("/static/style.css", self._static("style.css", "text/css")),
            web.get("/api/next", self._next),
            web.post("/api/answer", self._answer),
            web.post("/api/undo", self._undo),
            web.get("/owner", self._index("owner.html")),
            web.get("/static/owner.js", self._static("owner.js", "text/javascript")),
            web.get("/api/owner", self._owner),
            web.get(r"/clip/{clip_id:\d{1,18}}.png", self._clip),
            web.get("/api/episode", self._episode),
            web.get(r"/episode/{episode_id:\d{1,18}}.png", self._episode_png),
        ])

    # -- access ---------------------------------------------------------------
    def _authorised(self, request: web.Request) -> bool:
        offered = (request.query.get("token"), request.headers.get(TOKEN_HEADER), request.cookies.get(TOKEN_COOKIE))
        accepted = (self._owner_token,) if request.path in OWNER_PATHS else (self._token, self._owner_token)
        return any(t is not None and hmac.compare_digest(t.encode(), k) for t in offered for k in accepted)

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        if not self._authorised(request):
            response = web.Response(status=403, text="403 Forbidden: this page needs the run's token. Open the "
                                                      "address drlhp printed, with its ?token=...\n")
        else:
            try:
                response = await handler(request)
            except web.HTTPException as e:
                e.headers.update(SECURITY_HEADERS)
                raise
        response.headers.update(SECURITY_HEADERS)
        return response

    # -- the page ---------------------------------------------------------------
    def _index(self, name: str):
        async def handler(request: web.Request) -> web.Response:
            response = web.Response(body=self._files[name], content_type="text/html", charset="utf-8")
            token = request.query.get("token")
            if token is not None:  # authorised: the images the page loads then carry it as a cookie
                response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict", path="/")
            return response
        return handler

    def _static(self, name: str, content_type: str):
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=self._files[name], content_type=content_type, charset="utf-8")
        return handler

    # -- pairs and answers ----------------------------------------------------------
    async def _next(self, request: web.Request) -> web.Response:
        name = _checked_name(request.query.get("name"))
        return web.json_response(self._pair_json(self.pool.next_for(name), name))

    async def _answer(self, request: web.Request) -> web.Response:
        body = await _json_body(request, {"pair", "label", "name"},
                                '{"pair": <id>, "label": "L"|"R"|"E"|"skip", "name": <your name>}')
        pair_id, label, name = _checked_pair(body["pair"]), body["label"], _checked_name(body["name"])
        if not isinstance(label, str) or label not in CHOICE_VALUES:
            raise web.HTTPBadRequest(text=f"label must be one of {sorted(CHOICE_VALUES)}")
        given = Choice(label).label
        status, answer = self.pool.answer(pair_id, given, name)
        if answer is None:
            raise web.HTTPNotFound(text=f"no pair {pair_id} is out with the labellers")
        await _recorded(answer.done, "answer")
        if status == "duplicate" and (answer.labeller != name or answer.label != given):
            raise web.HTTPConflict(text=f"pair {pair_id} was already answered")
        reply = self._pair_json(self.pool.next_for(name), name)
        reply["duplicate"] = status == "duplicate"
        return web.json_response(reply)

    async def _undo(self, request: web.Request) -> web.Response:
        body = await _json_body(request, {"pair", "name"},
                                '{"pair": <the id of your latest answer>, "name": <your name>}')
        pair_id, name = _checked_pair(body["pair"]), _checked_name(body["name"])
        status, event = self.pool.take_back(pair_id, name)
        if event is None:
            raise _UNDO_REFUSALS[status](text=_undo_refusal_text(status, pair_id, self.settings.undo_limit))
        await _recorded(event.done, "take-back")
        reply = self._pair_json(self.pool.next_for(name), name)
        reply.update(duplicate=status == "duplicate", undone=pair_id)
        return web.json_response(reply)

    async def _owner(self, request: web.Request) -> web.Response:
        progress = self.progress()
        agreement = [{"a": a, "b": b, "pairs": n, "same": same, "rate": None if n == 0 else same / n}
                     for a, b, n, same, _ in progress["agreement"]]
        return web.json_response({"total": progress["total"], "remaining": progress["remaining"],
                                  "instructions": self.settings.instructions, "labellers": self.pool.labellers(),
                                  "agreement": agreement})

    def _pair_json(self, pair: OutPair | None, name: str) -> dict:
        s, progress = self.settings, self.progress()
        out = {"pair": None, "mine": self.pool.count(name), "total": progress["total"],
               "remaining": progress["remaining"], "fps": s.fps, "zoom": s.zoom, "h": s.frame_h, "w": s.frame_w,
               "instructions": s.instructions, "undo": self.pool.undoable(name), "pace": self.pool.pace(name)}
        if pair is not None:
            n = len(pair.a.frames)
            out.update(pair=pair.pair_id, left=pair.a.clip_id, right=pair.b.clip_id, frames=n, cols=sheet_cols(n),
                       second=pair.first is not None)
        return out

    # -- pictures -----------------------------------------------------------------------
    async def _clip(self, request: web.Request) -> web.Response:
        clip = self.pool.clip(int(request.match_info["clip_id"]))
        if clip is None:
            raise web.HTTPNotFound(text="no such clip out with the labellers")
        png = await asyncio.get_running_loop().run_in_executor(None, self.clips.clip_png, clip.clip_id, clip.shown)
        return web.Response(body=png, content_type="image/png")

    async def _episode(self, request: web.Request) -> web.Response:
        episode_id, n = self.clips.episode()
        return web.json_response({"episode": episode_id or None, "frames": n, "cols": sheet_cols(n)})

    async def _episode_png(self, request: web.Request) -> web.Response:
        episode_id = int(request.match_info["episode_id"])
        png = await asyncio.get_running_loop().run_in_executor(None, self.clips.episode_png, episode_id)
        if png is None:
            raise web.HTTPNotFound(text="that episode is no longer the last one")
        return web.Response(body=png, content_type="image/png")


async def _json_body(request: web.Request, fields: set[str], expected: str) -> dict:
    """The request's JSON object, with exactly ``fields``; else a 4xx saying what was ``expected``."""
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send the body as application/json")
    try:
        body = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text="the body is not valid JSON") from None
    if not isinstance(body, dict) or set(body) != fields:
        raise web.HTTPBadRequest(text=f"expected {expected}")
    return body


async def _recorded(done, what: str) -> None:
    """Wait until the interface has journaled it; else a 503 asking to send it again."""
    try:
        await asyncio.wait_for(asyncio.wrap_future(done), ACK_TIMEOUT)
    except (asyncio.TimeoutError, RuntimeError) as e:
        why = e or "timeout"
        raise web.HTTPServiceUnavailable(text=f"the {what} was not recorded ({why}); send it again") from None


_UNDO_REFUSALS = {"nothing": web.HTTPConflict, "not_last": web.HTTPConflict, "too_old": web.HTTPConflict,
                  "not_yours": web.HTTPForbidden, "unknown": web.HTTPNotFound}


def _undo_refusal_text(status: str, pair_id: int, limit: int) -> str:
    return {"nothing": "you have no answer left to take back",
            "not_last": f"take back your answers newest first: pair {pair_id} is not your latest",
            "too_old": f"only your last {limit} answers can be taken back",
            "not_yours": f"pair {pair_id} was answered by someone else: you can take back only your own answers",
            "unknown": f"no answer to pair {pair_id} is known"}[status]


def _checked_pair(pair_id) -> int:
    if not isinstance(pair_id, int) or isinstance(pair_id, bool) or pair_id < 0:
        raise web.HTTPBadRequest(text="pair must be a pair id (a whole number >= 0)")
    return pair_id


def _checked_name(name) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise web.HTTPBadRequest(text="name must be 1-40 letters, digits, spaces or . ' - _, starting with a "
                                      "letter or digit")
    return name


class ServerThread:
    """Runs an aiohttp app on its own thread and event loop; ``port`` is where it listens."""

    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="drlhp-web", daemon=True)
        self._thread.start()
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        try:
            self.port = self._call(self._start(host, port), timeout=30)
        except OSError as e:
            self.stop()
            raise OSError(f"cannot serve the labelling page on {host}:{port}: {e.strerror or e}. Pass another "
                          "web_port=, or web_port=0 for any free port") from e

    async def _start(self, host: str, port: int) -> int:
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        return self._runner.addresses[0][1]

    def _call(self, coro, timeout: float):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def stop(self) -> None:
        """Close the listening socket and open connections, then the loop; returns within seconds."""
        if self._loop.is_closed():
            return
        try:
            self._call(self._runner.cleanup(), timeout=5)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()
