"""The offline instructor export, served on loopback, renders every lab's figures with the
network cut off: the tests' chromium resolves no host name (isolation_support.NO_NETWORK,
checked below), no page even tries a request that does not go to the site's server, and no
request fails (404s included: the console stays clean). One server serves the site to every
test of the module, so the browser caches the bundled frontend as a student's would.

The check must be able to fail: the same page served WITHOUT the bundled ``_marimo`` folder
draws nothing (the negative control below).
"""

from __future__ import annotations

import shutil
import sys

import pytest
from browser_support import LABS, free_port, serve
from notebook_support import exported_lab, exported_site

from labs.core.course.export.offline import MATHJAX_FILE

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="session")
def offline_site(tmp_path_factory):
    """The offline instructor site of every lab, exported once per test run (shared with the
    lab tests' checks of the instructor copy)."""
    if not LABS:
        pytest.skip("no labs/lab_*.py yet")
    return exported_site(tmp_path_factory)


def requests_leaving(page, origin: str) -> list[str]:
    """Every request of the page that is not to ``origin`` (or data:/blob:): none may be tried,
    and the browser could not reach one anyway (it resolves no host name)."""
    attempted: list[str] = []
    page.on("request", lambda req: req.url.startswith((origin, "data:", "blob:"))
            or attempted.append(req.url))
    return attempted


def failed_requests(page) -> list[str]:
    """Every request of the page that failed (network error, abort) or was answered >= 400,
    404s included: a published page shows no error in the console."""
    failed: list[str] = []
    page.on("requestfailed", lambda req: failed.append(f"{req.url} ({req.failure})"))
    page.on("response", lambda res: res.status >= 400 and failed.append(
        f"{res.url} (HTTP {res.status})"))
    return failed


def http_server(folder):
    port = free_port()
    cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
           "--directory", str(folder)]
    return serve(cmd, f"http://127.0.0.1:{port}/")


@pytest.fixture(scope="module")
def site_origin(offline_site):
    """The site on one loopback server for the module (one origin: the browser's cache of the
    bundled frontend serves every lab after the first)."""
    with http_server(offline_site.site) as origin:
        yield origin


def test_the_browser_reaches_no_host_by_name(page, site_origin):
    # the network cut the tests rely on: even "localhost", which this machine resolves to the
    # site's own address, is not reached
    by_name = site_origin.replace("127.0.0.1", "localhost")
    with pytest.raises(Exception, match="ERR_NAME_NOT_RESOLVED"):
        page.goto(by_name)


def test_index_links_every_lab(offline_site, site_origin, page):
    attempted = requests_leaving(page, site_origin)
    failed = failed_requests(page)
    page.goto(site_origin)
    for r in offline_site.labs:
        assert page.locator(f'a[href="{r.page.name}"]').count() == 1
    page.wait_for_load_state("networkidle")
    assert attempted == [] and failed == []


def test_from_disk_the_page_says_how_to_serve_it(offline_site, page):
    r = offline_site.labs[0]
    page.goto(r.page.as_uri())  # file://: browsers will not run marimo's ES modules here
    alert = page.get_by_role("alert")
    alert.wait_for(state="visible")
    assert "python -m http.server" in alert.inner_text()


@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_offline_lab_renders_figures_without_network(lab, offline_site, site_origin, page,
                                                    artifacts):
    r = exported_lab(offline_site, lab)
    assert r.report.frontend_urls == 0, "the page still points at the CDN"
    assert r.report.figures >= 1, f"{lab.name}: the instructor copy (--reveal) shows no figure"
    attempted = requests_leaving(page, site_origin)
    failed = failed_requests(page)
    stand_in = []  # marimo's plotly plugin asks for MathJax: the site's stand-in answers
    page.on("request", lambda req: req.url.endswith("/" + MATHJAX_FILE) and stand_in.append(req.url))
    page.goto(site_origin + r.page.name)
    figs = page.locator("marimo-plotly")
    figs.first.wait_for(state="attached")
    assert figs.count() == r.report.figures
    figs.first.scroll_into_view_if_needed()
    figs.first.locator(".main-svg").first.wait_for(state="visible")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(artifacts / f"offline-{r.meta.slug}.png"))
    assert attempted == [], f"{lab.name}: the page tried to leave the machine: {attempted[:5]}"
    assert failed == [], f"{lab.name}: requests failed: {failed[:5]}"
    assert stand_in, f"{lab.name}: no figure asked for MathJax (did marimo change how it loads it?)"


def test_negative_control_without_bundled_assets_draws_nothing(offline_site, page, tmp_path):
    first = offline_site.labs[0].page
    shutil.copy(first, tmp_path / first.name)  # the page alone, no _marimo folder next to it
    with http_server(tmp_path) as origin:
        # a route turns the browser's cache off: only this server, without the assets, answers
        page.route("**/*", lambda route: route.continue_())
        page.goto(origin + first.name)
        page.wait_for_timeout(3000)
        assert page.locator("marimo-plotly .main-svg").count() == 0
