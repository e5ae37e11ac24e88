"""Headless Chromium for the page tests, driven with nothing but the standard library.

``render(page)`` opens a copy of the page with a probe script put first in its <head>: the probe
records every error event (a script error, an image or other resource that fails to load, captured
before any other element is parsed), every console.error / console.warn call, and on load the
count of images and of those that did not load (``complete`` and ``naturalWidth > 0``), into an
attribute of <html> that ``--dump-dom`` then prints. Chromium's own console log (``--enable-logging
=stderr``) is read as well. The network is cut (a proxy that does not exist), so a page that needs
it shows broken images."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")

PROBE = """<script>
(function () {
  var probe = {errors: [], images: 0, broken: 0, loaded: false};
  function save() { document.documentElement.setAttribute('data-probe', JSON.stringify(probe)); }
  window.addEventListener('error', function (e) {
    var t = e.target;
    probe.errors.push(t && t !== window ? 'resource failed: ' + (t.src || t.href || t.tagName) : String(e.message));
    save();
  }, true);
  ['error', 'warn'].forEach(function (level) {
    var orig = console[level];
    console[level] = function () { probe.errors.push('console.' + level + ': ' + Array.from(arguments).join(' ')); save(); orig.apply(console, arguments); };
  });
  window.addEventListener('load', function () {
    var imgs = Array.from(document.images);
    probe.images = imgs.length;
    probe.broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).length;
    probe.widths = imgs.map(function (i) { return i.naturalWidth; });
    probe.loaded = true;
    save();
  });
})();
</script>"""

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>")


def find_browser() -> str | None:
    """The path of a Chromium binary (``$TENSORQA_CHROMIUM`` first), or None."""
    env = os.environ.get("TENSORQA_CHROMIUM")
    if env and Path(env).exists():
        return env
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(browser: str, args: list[str], profile: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=timeout)


def render(page: str | os.PathLike, browser: str) -> dict:
    """Open ``page`` in headless Chromium: {"images", "broken", "widths", "errors", "loaded",
    "console_errors"} (console_errors: Chromium's logged console messages at error level)."""
    page = Path(page)
    html = page.read_text(encoding="utf-8")
    probed = re.sub(r"<head>", "<head>" + PROBE, html, count=1)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / page.name
        copy.write_text(probed, encoding="utf-8")
        r = _run(browser, ["--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom",
                           copy.as_uri()], str(Path(tmp) / "profile"))
    m = re.search(r'data-probe="([^"]*)"', r.stdout)
    if m is None:
        raise AssertionError(f"the probe did not run (exit {r.returncode}): {r.stderr[-2000:]}")
    probe = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    probe["console_errors"] = [line for line in r.stderr.splitlines() if "CONSOLE" in line and
                               ("ERROR" in line or '"error"' in line.lower() or "Uncaught" in line)]
    return probe


def screenshot(page: str | os.PathLike, out: str | os.PathLike, browser: str, size: str = "1400,3000") -> Path:
    """A PNG screenshot of ``page`` at ``size`` (width,height)."""
    with tempfile.TemporaryDirectory() as tmp:
        r = _run(browser, [f"--screenshot={Path(out).resolve()}", f"--window-size={size}", "--hide-scrollbars",
                           Path(page).resolve().as_uri()], str(Path(tmp) / "profile"))
    if not Path(out).exists():
        raise AssertionError(f"no screenshot (exit {r.returncode}): {r.stderr[-2000:]}")
    return Path(out)
