"""The page at ``/`` in a real browser: headless Chromium (Debian's chromium and chromium-driver, which
.ci/run installs) driven by Selenium, against a server on 127.0.0.1 and a free port, with no network
beyond it. Each test checks the page's DOM against the API's own answers and takes a screenshot (in the
test's tmp_path), checked to be a PNG of the page as drawn, not a blank one.

Without the browser the tests are skipped, except in CI (``CI=true``), where a missing browser fails."""
from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

WINDOW = (1280, 1000)


def _browser_paths() -> tuple[str, str] | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver")
                                              else None)
    return (chromium, driver) if chromium and driver else None


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Any]:
    paths = _browser_paths()
    if paths is None:
        message = "headless Chromium and chromedriver are not installed (Debian: apt-get install chromium chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; in CI .ci/run installs them")
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--disable-default-apps", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(paths[1]), options=options)  # a driver path: no Selenium Manager
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def site(app) -> Iterator[str]:
    from bm25lab.serve import running

    with running(app) as url:
        yield url


def wait(driver: Any, condition: Callable[[Any], Any], seconds: float = 30.0) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.05,
                         ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def open_page(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/")
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")


def screenshot(driver: Any, path: Path) -> None:
    """Save the page as drawn to ``path`` and check it: a PNG of the window's size whose pixels are not all
    one colour (drawn, not blank)."""
    import matplotlib.image

    assert driver.save_screenshot(str(path))
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 600 and height > 400
    pixels = matplotlib.image.imread(str(path))
    assert pixels.shape[:2] == (height, width) and float(pixels[..., :3].std()) > 0.02


def search_in_page(driver: Any, text: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "q")
    box.clear()
    box.send_keys(text)
    driver.find_element(By.ID, "go").click()
    return wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .hit")
                if "Results" in d.find_element(By.ID, "status").text else False)


def test_a_search_shows_titles_scores_snippets_and_metadata(browser, site, client, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    open_page(browser, site)
    hits = search_in_page(browser, "boundary layer transition")
    expected = client.get("/search", params={"q": "boundary layer transition", "k": 10, "snippets": "true"}).json()
    assert [h.get_attribute("data-doc-id") for h in hits] == [h["doc_id"] for h in expected["hits"]]
    first, shown = expected["hits"][0], hits[0]
    assert shown.find_element(By.CSS_SELECTOR, ".hit-title").text == first["title"]
    assert shown.find_element(By.CSS_SELECTOR, ".score").text == f"{first['score']:.4f}"
    marks = [m.text for m in shown.find_elements(By.CSS_SELECTOR, ".snippet mark")]
    snippet = first["snippet"]
    assert marks == [snippet["text"][a:b] for a, b in snippet["highlights"]] and "transition" in marks
    chips = {c.get_attribute("data-key"): c.get_attribute("data-value") for c in shown.find_elements(By.CSS_SELECTOR, ".chip")}
    assert chips["author"] == first["metadata"]["author"]
    assert "Results 1–10" in browser.find_element(By.ID, "status").text
    screenshot(browser, tmp_path / "results.png")
    # a title opens the document
    shown.find_element(By.CSS_SELECTOR, ".hit-title").click()
    panel = wait(browser, lambda d: d.find_element(By.ID, "document") if d.find_element(By.ID, "document").is_displayed()
                 else False)
    document = client.get(f"/documents/{first['doc_id']}").json()
    assert browser.find_element(By.ID, "document-id").text == first["doc_id"]
    assert browser.find_element(By.ID, "document-text").text.split() == document["text"].split()
    screenshot(browser, tmp_path / "document.png")
    browser.find_element(By.ID, "close-document").click()
    assert not panel.is_displayed()


def test_filters_and_paging(browser, site, client, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    open_page(browser, site)
    browser.find_element(By.ID, "add-filter").click()
    row = browser.find_elements(By.CSS_SELECTOR, "#filter-rows .filter-row")[-1]
    row.find_element(By.CSS_SELECTOR, ".key").send_keys("year")
    Select(row.find_element(By.CSS_SELECTOR, ".op")).select_by_value(">=")
    row.find_element(By.CSS_SELECTOR, ".value").send_keys("1962")
    browser.find_element(By.ID, "add-filter").click()
    row = browser.find_elements(By.CSS_SELECTOR, "#filter-rows .filter-row")[-1]
    row.find_element(By.CSS_SELECTOR, ".key").send_keys("author")
    Select(row.find_element(By.CSS_SELECTOR, ".op")).select_by_value("=")
    row.find_element(By.CSS_SELECTOR, ".value").send_keys('""')
    row.find_element(By.CSS_SELECTOR, ".exclude").click()  # leave out documents without an author
    hits = search_in_page(browser, "heat transfer")
    params = {"q": "heat transfer", "k": 10, "where": "year>=1962", "where_not": 'author=""'}
    expected = client.get("/search", params=params).json()["hits"]
    assert len(expected) == 10
    assert [h.get_attribute("data-doc-id") for h in hits] == [h["doc_id"] for h in expected]
    years = [int(h.find_element(By.CSS_SELECTOR, '.chip[data-key="year"]').get_attribute("data-value")) for h in hits]
    assert min(years) >= 1962
    assert "(filtered)" in browser.find_element(By.ID, "status").text
    screenshot(browser, tmp_path / "filtered.png")
    # the next page: ranks 11..20, as the API pages them
    assert browser.find_element(By.ID, "prev").get_attribute("disabled") is not None
    first_page = hits[0].get_attribute("data-doc-id")
    browser.find_element(By.ID, "next").click()
    hits = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#hits .hit")
                if d.find_elements(By.CSS_SELECTOR, "#hits .hit")[0].get_attribute("data-doc-id") != first_page else False)
    second = client.get("/search", params={**params, "offset": 10}).json()["hits"]
    assert [h.get_attribute("data-rank") for h in hits] == [str(r) for r in range(11, 11 + len(second))]
    assert [h.get_attribute("data-doc-id") for h in hits] == [h["doc_id"] for h in second]
    assert browser.find_element(By.ID, "page").text == "page 2"
    # a bad filter is said on the page, in one line
    row.find_element(By.CSS_SELECTOR, ".value").clear()
    Select(row.find_element(By.CSS_SELECTOR, ".op")).select_by_value("in")
    browser.find_element(By.ID, "go").click()
    status = wait(browser, lambda d: d.find_element(By.ID, "status") if "error" in
                  (d.find_element(By.ID, "status").get_attribute("class") or "") else False)
    assert "bad filter" in status.text and browser.find_elements(By.CSS_SELECTOR, "#hits .hit") == []


def test_the_evaluation_view_shows_the_table_and_plots(browser, site, client, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    open_page(browser, site)
    browser.find_element(By.ID, "tab-evaluation").click()
    assert browser.find_element(By.ID, "evaluation").is_displayed() and not browser.find_element(By.ID, "search").is_displayed()
    browser.find_element(By.ID, "evaluate").click()
    wait(browser, lambda d: d.find_element(By.ID, "evaluation-result").is_displayed())
    expected = client.get("/evaluation", params={"run": "bm25.run", "qrels": "cranfield"}).json()
    cells = {c.get_attribute("data-measure"): c.text for c in browser.find_elements(By.CSS_SELECTOR, "#means td[data-measure]")}
    assert cells == {m: f"{expected['mean'][m]:.4f}" for m in expected["measures"]}
    assert len(browser.find_elements(By.CSS_SELECTOR, "#per-query tbody tr")) == expected["num_queries"] == 225
    points = browser.find_element(By.CSS_SELECTOR, "#pr-plot polyline.curve").get_attribute("points").split()
    assert len(points) == 11
    assert len(browser.find_elements(By.CSS_SELECTOR, "#query-plot rect.bar")) == 225
    assert "225 queries evaluated" in browser.find_element(By.ID, "evaluation-status").text
    screenshot(browser, tmp_path / "evaluation.png")


def test_the_api_reference_page(browser, site, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site + "/docs")
    wait(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "true")
    paths = {e.text for e in browser.find_elements(By.CSS_SELECTOR, ".endpoint h3 code")}
    assert {"/search", "/documents/{doc_id}", "/info", "/evaluation"} <= paths
    screenshot(browser, tmp_path / "api.png")
