"""prunesim report's page in a real browser: headless Chromium takes a screenshot, and the pixels are checked.

The screenshot must not be blank, must show the title (white text on the
header's dark band at the top) and at least one figure (the figure palette's
colours, which nothing else on the page uses). Each check is also run on a
copy of the page with the title's text, or the figures, taken out, and must
fail there: a check that cannot fail checks nothing. A second test clicks a
column of a long table and reads the sorted rows back from the browser's DOM.

Chromium is found as ``chromium`` on PATH (Debian's package, which .ci/run
installs) or at ``PRUNESIM_CHROMIUM``. Without it the tests skip, saying so,
except in CI (``CI`` set), where they fail: there the page must have been seen.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from cli_capture import cli

WIDTH, HEIGHT = 1280, 1400  # px: the header and the run's first figure both fall inside
HEADER = (0x1B, 0x3A, 0x57)  # the header band's colour (templates/report.html.j2)
FIGURE_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2")  # prunesim.plots.style's first five


def chromium() -> str | None:
    return os.environ.get("PRUNESIM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


BROWSER = chromium()
if BROWSER is None:
    if os.environ.get("CI"):
        raise RuntimeError("CI: the report's browser tests need Chromium; .ci/run installs it "
                           "(apt-get install -y chromium)")
    pytest.skip("needs headless Chromium: apt-get install chromium (Debian, Ubuntu), or set PRUNESIM_CHROMIUM to a "
                "Chrome or Chromium binary (docs/testing.md)", allow_module_level=True)


def browser(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """Chromium, headless, with a profile of its own and nothing reaching out to the network."""
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def screenshot(page: Path, tmp: Path) -> np.ndarray:
    """The page as Chromium draws it: an HEIGHT x WIDTH x 3 array of 0..255 colours."""
    from matplotlib.image import imread

    png = tmp / f"{page.stem}.png"
    done = browser(tmp, f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={png}", page.as_uri())
    assert png.is_file(), f"no screenshot: {done.stderr[-2000:]}"
    pixels = imread(png)  # floats 0..1, RGB or RGBA
    return np.rint(pixels[:, :, :3] * 255).astype(int)


def near(pixels: np.ndarray, colour, tolerance: int = 40) -> np.ndarray:
    if isinstance(colour, str):
        colour = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return np.abs(pixels - np.array(colour)).sum(axis=2) <= tolerance


def not_blank(pixels: np.ndarray) -> bool:
    white = near(pixels, (255, 255, 255), 15).mean()
    return pixels.std() > 20 and white < 0.97


def shows_title(pixels: np.ndarray) -> bool:
    """The top band is the header's colour with white text in it (the title is the only white text there)."""
    band = pixels[:60]
    return near(band, HEADER).mean() > 0.6 and near(band, (255, 255, 255), 60).sum() > 400


def shows_figure(pixels: np.ndarray) -> bool:
    """Below the header, at least two of the figure palette's colours, each on 150 pixels or more."""
    body = pixels[100:]
    return sum(int(near(body, c).sum() >= 150) for c in FIGURE_COLOURS) >= 2


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    run = tmp / "run"
    code, _, err = cli("run", "oscillation-40", "--seed", "3", "--out", run)
    assert code == 0, err
    out = tmp / "report.html"
    code, _, err = cli("report", run, "--out", out)
    assert code == 0, err
    return out


def test_the_page_shows_its_title_and_a_figure_in_chromium(page, tmp_path):
    pixels = screenshot(page, tmp_path)
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert not_blank(pixels)
    assert shows_title(pixels)
    assert shows_figure(pixels)

    html = page.read_text()
    untitled = tmp_path / "untitled.html"
    untitled.write_text(re.sub(r'(<header class="page">).*?(</header>)', r"\1\2", html, flags=re.S))
    without_title = screenshot(untitled, tmp_path)
    assert not shows_title(without_title), "the title check passes on a page without a title"
    assert shows_figure(without_title)

    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r"<svg\b.*?</svg>", "", html, flags=re.S))
    without_figures = screenshot(bare, tmp_path)
    assert not shows_figure(without_figures), "the figure check passes on a page without figures"
    assert shows_title(without_figures)

    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    assert not not_blank(screenshot(blank, tmp_path)), "the blank check passes on a blank page"


class _Values(HTMLParser):
    """The data-sort values of the first table's second column, in the order of its rows."""

    def __init__(self) -> None:
        super().__init__()
        self.tables = 0
        self.column = 0
        self.values: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables += 1
        elif tag == "tr":
            self.column = 0
        elif tag == "td" and self.tables == 1:
            self.column += 1
            if self.column == 2:
                self.values.append(dict(attrs).get("data-sort", ""))


def test_clicking_a_header_sorts_a_long_table_in_chromium(page, tmp_path):
    clicked = tmp_path / "clicked.html"
    script = ('<script>var th = document.querySelector("table.sortable thead th:nth-child(2)");'
              "th.click(); th.click();</script></body>")  # twice: descending
    clicked.write_text(page.read_text().replace("</body>", script))
    done = browser(tmp_path, "--dump-dom", clicked.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = _Values(), _Values()
    before.feed(page.read_text())
    after.feed(done.stdout)
    numbers = [float(v) for v in after.values if v and re.fullmatch(r"-?[0-9.e+-]+", v)]
    assert len(after.values) == len(before.values) > 50
    assert before.values != after.values  # the click moved rows
    assert numbers == sorted(numbers, reverse=True) and len(numbers) > 50
    assert 'aria-sort="descending"' in done.stdout
