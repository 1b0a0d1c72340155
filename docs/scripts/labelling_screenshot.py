"""Makes docs/images/labelling-session.png: the browser labelling page during a Pong run.

Not part of the site (mkdocs.yml excludes docs/scripts/). Needs the web extra, ale-py and Debian's
Chromium (Playwright's own browser download is not used):

    python docs/scripts/labelling_screenshot.py [OUT.png]

A wrapper with labelling="web" steps random actions on Pong in a thread while headless Chromium opens the
printed address, gives a labeller name, answers three pairs and photographs the page at the fourth.
"""
import os
import shutil
import sys
import tempfile
import threading

import gymnasium
from playwright.sync_api import sync_playwright

from drlhp import HumanPreferencesEnvWrapper


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "images",
                                                               "labelling-session.png")
    import ale_py  # registers the ALE/ envs

    gymnasium.register_envs(ale_py)
    log_dir = tempfile.mkdtemp(prefix="drlhp-screenshot-")
    env = HumanPreferencesEnvWrapper(gymnasium.make("ALE/Pong-v5"), synthetic_preferences=False, labelling="web",
                                     web_port=0, train_reward=False, log_dir=log_dir, segment_length=25, seed=0)
    stop = threading.Event()

    def play() -> None:  # the agent: random actions, as fast as the env goes
        env.reset(seed=0)
        while not stop.is_set():
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()

    player = threading.Thread(target=play)
    player.start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1200, "height": 760})
            page.goto(env.labelling_url)
            page.fill("#name", "ada")
            page.click("#who button")
            page.wait_for_selector("#pair:not([hidden])", timeout=120_000)
            for n, key in enumerate("LRL", start=1):  # a few answers, so the counts read like a session
                # Selectors, not wait_for_function: the page's Content-Security-Policy forbids eval.
                page.locator("#status", has_text=f"Pair {n}:").wait_for(timeout=120_000)
                page.keyboard.press(key)
                page.locator("#counts", has_text=f"Your labels: {n} ").wait_for(timeout=60_000)
            page.locator("#status", has_text="Pair 4:").wait_for(timeout=120_000)
            page.wait_for_timeout(1500)  # let the clips loop to a frame with the ball in view
            page.screenshot(path=out)
            browser.close()
    finally:
        stop.set()
        player.join()
        env.close()
        shutil.rmtree(log_dir)  # three labels of a random agent: nothing to keep
    print(out)


if __name__ == "__main__":
    main()
