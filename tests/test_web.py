"""Labelling in a browser: the page's server against bad input, and a real Chromium against a live run."""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("PIL")

from conftest import FakePixelEnv, gone, labels_by_seq, resume_and_read_labels, wait_for  # noqa: E402

from drlhp import (  # noqa: E402
    HumanPreferencesEnvWrapper,
    PrefBuffer,  # noqa: E402
    PreferenceConfig,
)
from drlhp.clips.clip import Clip  # noqa: E402
from drlhp.clips.frames import infer_frame_spec  # noqa: E402
from drlhp.labelling.answers import TakeBack  # noqa: E402
from drlhp.labelling.web.labeller import WebConfig, WebLabeller  # noqa: E402
from drlhp.labelling.web.server import MAX_BODY_BYTES  # noqa: E402
from drlhp.runtime.settings import web_config  # noqa: E402

TOKEN = "test-token-0123456789abcdef"
OWNER_TOKEN = "owner-token-0123456789abcdef"


def page_settings(spec, port: int) -> WebConfig:
    """The page's settings as a run's with ``web_port=port``, but with a known token and no answers log."""
    run = PreferenceConfig(synthetic_preferences=False, labelling="web", web_port=port)
    return dataclasses.replace(web_config(run, spec), token=TOKEN, owner_token=OWNER_TOKEN, log_path=None)


def http(url, body=None, headers=None, raw=None, content_type="application/json"):
    """(status, body bytes, headers) of a request; HTTP errors are returned, not raised."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


@pytest.fixture
def served():
    """A labeller serving two pairs, and a thread playing the interface: it acknowledges answers."""
    spec = infer_frame_spec(np.zeros((8, 8, 3), np.uint8))
    labeller = WebLabeller(page_settings(spec, 0))
    frames = [np.full((3, 8, 8, 3), i * 40, np.uint8) for i in range(4)]
    segs = [Clip(i, frames[i], np.zeros(3)) for i in range(4)]
    labeller.offer(segs[0], segs[1])
    labeller.offer(segs[2], segs[3])
    recorded, stop = [], threading.Event()

    def interface():  # records answers as labels 0, 1, ... and take-backs as ("undo", pair, who)
        seq = 0
        while not stop.wait(0.005):
            for event in labeller.take_answers():
                if isinstance(event, TakeBack):
                    recorded.append(("undo", event.answer.pair_id, event.answer.labeller))
                else:
                    event.seq, seq = seq, seq + 1
                    recorded.append((event.a.clip_id, event.b.clip_id, event.label, event.labeller))
                labeller.acknowledge(event)

    thread = threading.Thread(target=interface, daemon=True)
    thread.start()
    base = labeller.url.split("/?")[0]
    yield base, recorded, labeller
    stop.set()
    thread.join()
    labeller.close()


AUTH = {"X-Drlhp-Token": TOKEN}


def test_every_route_needs_the_token(served):
    base, recorded, _ = served
    for path in ("/", "/static/app.js", "/api/next?name=a", "/clip/0.png", "/api/episode", "/episode/1.png"):
        for headers in ({}, {"X-Drlhp-Token": "wrong-token-0123456789abcdef"}, {"Cookie": "drlhp_token=nope"}):
            status, _, _ = http(base + path, headers=headers)
            assert status == 403, (path, headers)
    status, _, _ = http(base + "/api/answer", {"pair": 1, "label": "L", "name": "a"})
    assert status == 403 and recorded == []
    status, page, headers = http(base + f"/?token={TOKEN}")
    assert status == 200 and b"Which clip is better?" in page
    assert "script-src 'self'" in headers["Content-Security-Policy"] and f"drlhp_token={TOKEN}" in headers["Set-Cookie"]
    assert http(base + "/api/episode", headers={"Cookie": f"drlhp_token={TOKEN}"})[0] == 200


def test_bad_answers_get_4xx_and_store_nothing(served):
    base, recorded, _ = served
    pair = json.loads(http(base + "/api/next?name=alice", headers=AUTH)[1])["pair"]
    post = base + "/api/answer"
    bad = [
        (dict(raw=b'{"pair": 1, "label": '), 400),  # malformed JSON
        (dict(body=[pair, "L", "alice"]), 400),  # not an object
        (dict(body={"pair": pair, "label": "L"}), 400),  # a field missing
        (dict(body={"pair": pair, "label": "L", "name": "alice", "x": 1}), 400),  # a field too many
        (dict(body={"pair": pair, "label": "left", "name": "alice"}), 400),  # label outside L, R, E, skip
        (dict(body={"pair": pair, "label": 1.0, "name": "alice"}), 400),
        (dict(body={"pair": str(pair), "label": "L", "name": "alice"}), 400),
        (dict(body={"pair": True, "label": "L", "name": "alice"}), 400),
        (dict(body={"pair": pair, "label": "L", "name": "<script>"}), 400),
        (dict(body={"pair": pair, "label": "L", "name": "x" * 41}), 400),
        (dict(body={"pair": 12345, "label": "L", "name": "alice"}), 404),  # unknown pair
        (dict(body={"pair": pair, "label": "L", "name": "alice"}, content_type="text/plain"), 415),
        (dict(raw=b'{"pair": 1, "label": "L", "name": "' + b"a" * MAX_BODY_BYTES + b'"}'), 413),  # oversized
    ]
    for kwargs, expected in bad:
        status, body, _ = http(post, headers=AUTH, **kwargs)
        assert status == expected, (kwargs, status, body)
    assert http(base + "/api/next", headers=AUTH)[0] == 400  # no name
    assert http(base + "/clip/99.png", headers=AUTH)[0] == 404  # no pair out shows it
    assert http(base + "/static/../pref_db.py", headers=AUTH)[0] == 404  # no file paths from requests
    assert recorded == []


def test_an_answer_sent_twice_counts_once(served):
    base, recorded, _ = served
    pair = json.loads(http(base + "/api/next?name=alice", headers=AUTH)[1])
    answer = {"pair": pair["pair"], "label": "R", "name": "alice"}
    status, first, _ = http(base + "/api/answer", answer, headers=AUTH)
    assert status == 200 and json.loads(first)["duplicate"] is False
    status, again, _ = http(base + "/api/answer", answer, headers=AUTH)
    assert status == 200 and json.loads(again)["duplicate"] is True
    other = dict(answer, label="L")
    assert http(base + "/api/answer", other, headers=AUTH)[0] == 409  # a different answer to an answered pair
    assert recorded == [(pair["left"], pair["right"], 0.0, "alice")]
    assert json.loads(again)["mine"] == 1


def test_undo_takes_back_your_latest_answer_once_and_bad_undos_get_4xx(served):
    base, recorded, labeller = served
    undo = base + "/api/undo"
    assert http(undo, {"pair": 1, "name": "alice"}, headers=AUTH)[0] == 409  # nothing to take back yet
    pair = json.loads(http(base + "/api/next?name=alice", headers=AUTH)[1])
    reply = json.loads(http(base + "/api/answer", {"pair": pair["pair"], "label": "L", "name": "alice"},
                            headers=AUTH)[1])
    assert reply["undo"] == pair["pair"]  # the page learns which answer U takes back
    bad = [
        (dict(raw=b'{"pair": '), 400),
        (dict(body={"pair": pair["pair"]}), 400),
        (dict(body={"pair": pair["pair"], "name": "alice", "label": "L"}), 400),
        (dict(body={"pair": -1, "name": "alice"}), 400),
        (dict(body={"pair": pair["pair"], "name": "bob"}), 409),  # bob has no answer to take back
        (dict(body={"pair": reply["pair"], "name": "alice"}), 404),  # a pair nobody answered
        (dict(body={"pair": pair["pair"], "name": "alice"}, content_type="text/plain"), 415),
    ]
    for kwargs, expected in bad:
        status, body, _ = http(undo, headers=AUTH, **kwargs)
        assert status == expected, (kwargs, status, body)
    assert recorded == [(pair["left"], pair["right"], 1.0, "alice")]
    status, first, _ = http(undo, {"pair": pair["pair"], "name": "alice"}, headers=AUTH)
    again = json.loads(first)
    assert status == 200 and again["undone"] == pair["pair"] and again["duplicate"] is False
    assert (again["left"], again["right"]) == (pair["left"], pair["right"])  # the pair again, to answer anew
    assert again["mine"] == 0 and again["undo"] is None
    status, second, _ = http(undo, {"pair": pair["pair"], "name": "alice"}, headers=AUTH)
    assert status == 200 and json.loads(second)["duplicate"] is True  # sent twice: taken back once
    labeller.offer(*(Clip(i, np.full((3, 8, 8, 3), i, np.uint8), np.zeros(3)) for i in (8, 9)))  # bob's
    bobs = json.loads(http(base + "/api/next?name=bob", headers=AUTH)[1])
    http(base + "/api/answer", {"pair": bobs["pair"], "label": "R", "name": "bob"}, headers=AUTH)
    assert http(undo, {"pair": bobs["pair"], "name": "alice"}, headers=AUTH)[0] == 409  # alice has none left
    alices = json.loads(http(base + "/api/answer", {"pair": again["pair"], "label": "E", "name": "alice"},
                             headers=AUTH)[1])
    assert alices["undo"] == again["pair"]
    assert http(undo, {"pair": bobs["pair"], "name": "alice"}, headers=AUTH)[0] == 403  # bob's answer, not hers
    assert recorded[1:] == [("undo", pair["pair"], "alice"), (bobs["left"], bobs["right"], 0.0, "bob"),
                            (pair["left"], pair["right"], 0.5, "alice")]


def test_the_owner_page_needs_the_owners_token(served):
    base, _, labeller = served
    for path in ("/owner", "/static/owner.js", "/api/owner"):
        assert http(base + path, headers=AUTH)[0] == 403, path  # the labellers' token does not open it
        assert http(base + path, headers={"X-Drlhp-Token": OWNER_TOKEN})[0] == 200, path
    assert http(base + "/api/next?name=owner", headers={"X-Drlhp-Token": OWNER_TOKEN})[0] == 200
    labeller.set_progress(5, 6, [("web:alice", "web:bob", 4, 3, 0.75)])
    owner = json.loads(http(base + "/api/owner", headers={"X-Drlhp-Token": OWNER_TOKEN})[1])
    assert owner["agreement"] == [{"a": "web:alice", "b": "web:bob", "pairs": 4, "same": 3, "rate": 0.75}]
    assert owner["total"] == 5 and labeller.owner_url.endswith(f"/owner?token={OWNER_TOKEN}")


def test_two_labellers_get_different_pairs_and_clips_arrive_as_png(served):
    base, _, _ = served
    a = json.loads(http(base + "/api/next?name=alice", headers=AUTH)[1])
    b = json.loads(http(base + "/api/next?name=bob", headers=AUTH)[1])
    assert {a["left"], a["right"]}.isdisjoint({b["left"], b["right"]})
    status, png, headers = http(base + f"/clip/{a['left']}.png", headers=AUTH)
    assert status == 200 and headers["Content-Type"] == "image/png" and png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (a["frames"], a["cols"], a["w"], a["h"]) == (3, 2, 8, 8)


def test_a_busy_port_is_a_clear_error(served):
    base, _, labeller = served
    port = int(base.rsplit(":", 1)[1])
    spec = infer_frame_spec(np.zeros((8, 8, 3), np.uint8))
    with pytest.raises(OSError, match=f"cannot serve the labelling page on 127.0.0.1:{port}.*web_port=0"):
        WebLabeller(page_settings(spec, port))


def test_every_acknowledged_answer_and_take_back_survives_a_sigkill_of_the_main_program(tmp_path):
    script = os.path.join(os.path.dirname(__file__), "scripts", "web_session.py")
    proc = subprocess.Popen([sys.executable, script, str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    info = json.loads(proc.stdout.readline() or "{}")
    assert info, proc.stderr.read()
    base, token = info["url"].split("/?token=")
    headers = {"X-Drlhp-Token": token}
    acknowledged, n_answers = [], 0
    while len(acknowledged) < 12:
        pair = json.loads(http(base + "/api/next?name=bob", headers=headers)[1])
        if pair["pair"] is None:
            continue
        label = "LRE"[n_answers % 3]
        status, _, _ = http(base + "/api/answer", {"pair": pair["pair"], "label": label, "name": "bob"},
                            headers=headers)
        assert status == 200
        acknowledged.append((pair["left"], pair["right"], {"L": 1.0, "R": 0.0, "E": 0.5}[label], "web:bob"))
        n_answers += 1
        if n_answers % 4 == 0:  # every fourth answer taken back: the retraction is acknowledged once journaled
            assert http(base + "/api/undo", {"pair": pair["pair"], "name": "bob"}, headers=headers)[0] == 200
            acknowledged.pop()
    os.kill(info["main"], signal.SIGKILL)
    proc.communicate(timeout=60)
    assert wait_for(lambda: gone(info["pref_interface"]) and gone(info["reward_trainer"]), timeout=45)
    buffer = PrefBuffer.load_all(str(tmp_path))
    stored = [(a, b, label, who) for db in (buffer.train_db, buffer.val_db)
              for (a, b, label), who in zip(db.prefs, db.labellers)]
    assert sorted(stored) == sorted(acknowledged)
    assert all(s >= 0 for db in (buffer.train_db, buffer.val_db) for s in db.answer_seconds)  # from the journal


# -- a real browser against a live run ---------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def wait_for_text_change(page, selector, before, timeout_ms=15000):
    page.wait_for_function("([s, b]) => document.querySelector(s).textContent !== b", arg=[selector, before],
                           timeout=timeout_ms)


TASK = "Prefer the clip that gets brighter faster."


def web_run(log_dir: str, **settings):
    """A run labelled on the web page, and a thread stepping it (as an agent would) until the event is set."""
    # Frames of this env brighten every step, so two moments of a clip never look the same.
    env = HumanPreferencesEnvWrapper(FakePixelEnv(shape=(16, 16, 3), episode_length=60), synthetic_preferences=False,
                                     labelling="web", web_port=0, log_dir=log_dir, train_reward=False,
                                     label_budget=100, seed=0, log_level=30, **settings)
    stop = threading.Event()

    def agent():
        env.reset(seed=0)
        while not stop.wait(0.001):
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()

    thread = threading.Thread(target=agent)
    thread.start()
    return env, stop, thread


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_label_in_chromium_l_r_undo_e_and_cant_tell_reach_the_database(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    log_dir = str(tmp_path / "run")
    env, stop, thread = web_run(log_dir, labelling_instructions=TASK)
    shots = []
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            assert page.goto(env.labelling_url.split("?")[0]).status == 403
            page.goto(env.labelling_url)
            page.fill("#name", "alice")
            page.click("#who button")
            page.wait_for_selector("#pair:not([hidden])", timeout=30000)
            # Two clips playing: the canvases change between two screenshots.
            left, right = page.locator("#left"), page.locator("#right")
            first = (left.screenshot(), right.screenshot())
            frame_shown = page.eval_on_selector("#frame", "e => e.value")
            page.wait_for_function("v => document.querySelector('#frame').value !== v", arg=frame_shown)
            second = (left.screenshot(), right.screenshot())
            assert first[0] != second[0] and first[1] != second[1]
            assert page.is_visible("#task") and page.text_content("#task-text") == TASK
            page.screenshot(path=str(tmp_path / "page.png"))  # the task above the clips (docs/labelling.md)
            shots.append(str(tmp_path / "page.png"))
            statuses = []
            for key in ("l", "r", "u", "e", "s"):
                status = page.text_content("#status")
                page.keyboard.press(key)
                wait_for_text_change(page, "#status", status)
                statuses.append(page.text_content("#status"))
            counts = page.text_content("#counts")
            browser.close()
    finally:
        stop.set()
        thread.join()
        env.close()
    assert "Took back your answer" in statuses[2]
    assert "Your labels: 2" in counts and "the run's labels: 2" in counts and "left in the label budget" in counts
    buffer = PrefBuffer.load_all(log_dir)  # the snapshot close() wrote, and what the journal still holds
    assert [(label, who) for *_, label, who in labels_by_seq(buffer)] == [(1.0, "web:alice"), (0.5, "web:alice")]
    seconds = [s for db in (buffer.train_db, buffer.val_db) for s in db.answer_seconds]  # how long each took
    assert len(seconds) == 2 and all(s >= 0 for s in seconds)
    with open(os.path.join(log_dir, "human_labels.csv")) as f:
        rows = list(csv.DictReader(f))
    assert [(r["label"], r["labeller"]) for r in rows] == [("1.0", "alice"), ("0.0", "alice"), ("undo", "alice"),
                                                           ("0.5", "alice")]
    assert rows[1]["pair"] == rows[2]["pair"] and (rows[1]["clip_left"], rows[1]["clip_right"]) == (
        rows[3]["clip_left"], rows[3]["clip_right"])  # the pair taken back was answered again
    assert all(float(r["seconds_to_answer"]) >= 0 for r in rows)
    resumed = resume_and_read_labels(FakePixelEnv(shape=(16, 16, 3), episode_length=60), log_dir, pairs_asked=2,
                                     label_budget=100)
    assert resumed == [(1.0, "web:alice"), (0.5, "web:alice")]


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_two_labellers_in_two_browsers_see_their_agreement_on_the_owners_page(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    log_dir = str(tmp_path / "run")
    env, stop, thread = web_run(log_dir, second_opinion_share=1.0)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            pages = {}
            for name in ("alice", "bob"):  # two browser contexts: two people, each with their own storage
                page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
                page.goto(env.labelling_url)
                page.fill("#name", name)
                page.click("#who button")
                page.wait_for_selector("#pair:not([hidden])", timeout=30000)
                pages[name] = page

            def press(name: str, key: str) -> str:
                page = pages[name]
                status = page.text_content("#status")
                page.keyboard.press(key)
                wait_for_text_change(page, "#status", status)
                return page.text_content("#status")

            press("alice", "l")  # her pair now waits for bob's second opinion
            assert "(a second opinion)" in press("bob", "l")  # bob answers his own pair, then is handed hers
            press("bob", "l")  # bob seconds alice's L: they agree
            assert "(a second opinion)" in press("alice", "r")  # alice answers her next, then is handed bob's
            press("alice", "e")  # alice seconds bob's L with E: they disagree
            owner = browser.new_context().new_page()
            assert owner.goto(env.labelling_url.replace("/?", "/owner?")).status == 403  # not with a labeller's token
            owner.goto(env.labelling_owner_url)
            # A function, not an expression: Playwright evals an expression again at every poll, which the page's
            # Content-Security-Policy (no 'unsafe-eval') refuses once the first check has found no row yet.
            owner.wait_for_function("() => document.querySelectorAll('#agreement tbody tr').length === 1",
                                    timeout=15000)
            row = owner.text_content("#agreement tbody tr")
            owner.screenshot(path=str(tmp_path / "owner.png"))
            stats = env.stats()
            browser.close()
    finally:
        stop.set()
        thread.join()
        env.close()
    assert "web:alice · web:bob" in row and "50 %" in row
    assert stats.agreement == (("web:alice", "web:bob", 2, 1, 0.5),) and stats.label_agreement == 0.5
    buffer = PrefBuffer.load_all(log_dir)
    pairs_twice = [(first, second) for db in (buffer.train_db, buffer.val_db)
                   for first, second in zip(db.labellers, db.second_labellers) if second]
    assert sorted(pairs_twice) == [("web:alice", "web:bob"), ("web:bob", "web:alice")]
