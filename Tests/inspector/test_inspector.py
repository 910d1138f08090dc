"""`syncstore-cli inspect` driven in a real browser: Debian's headless Chromium through Debian's
chromedriver (selenium; nothing downloads a browser). One store is made by the CLI against a dev
server these tests start: soups, a sync down, a sync up with a conflict, entries holding HTML, a
big soup; a second dev server answers slowly so a sync's progress can be watched live.

Screenshots go to $SYNCSTORE_INSPECTOR_SHOTS, else build/inspector-screenshots (ignored by git).
The binary is $SYNCSTORE_CLI, else .build/debug/syncstore-cli.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("SYNCSTORE_CLI", str(ROOT / ".build" / "debug" / "syncstore-cli"))
SHOTS = Path(os.environ.get("SYNCSTORE_INSPECTOR_SHOTS", str(ROOT / "build" / "inspector-screenshots")))
CHROMIUM = os.environ.get("SYNCSTORE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SYNCSTORE_CHROMEDRIVER", "/usr/bin/chromedriver")
TOKEN = "inspector-test-token"
CONTACTS = 60
ENTRIES = CONTACTS + 1  # the contacts soup: the synced ones and one created offline (refused by the server)
BIG = 1500
HOSTILE = ['<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>",
           '"><svg onload="window.__pwned=3">']

USERSTORE = {"soups": [{"soupName": "contacts", "indexes": [
    {"path": "Id", "type": "string"}, {"path": "LastName", "type": "string"}, {"path": "__local__", "type": "string"}]}]}
USERSYNCS = {"syncs": [
    {"syncName": "contacts-down", "syncType": "syncDown", "soupName": "contacts",
     "target": {"type": "soql", "query": "SELECT Id, LastName, Title, LastModifiedDate FROM Contact"},
     "options": {"mergeMode": "LEAVE_IF_CHANGED"}},
    {"syncName": "contacts-up", "syncType": "syncUp", "soupName": "contacts",
     "options": {"fieldlist": ["LastName", "Title"], "mergeMode": "LEAVE_IF_CHANGED"}},
]}

def cli(*args, stdin=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k not in ("SYNCSTORE_KEY", "SYNCSTORE_NEW_KEY")}
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout, input=stdin, env=env)


def ok(*args, stdin=None):
    r = cli(*args, stdin=stdin)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Served:
    """`syncstore-cli serve --json` as a process."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([CLI, "serve", "--json", "--token", TOKEN, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, f"serve printed nothing: {self.proc.stderr.read()}"
        self.url = json.loads(line)["url"]

    def request(self, method, path, body=None):
        req = urllib.request.Request(self.url + "/services/data/v62.0/" + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
            return json.loads(text) if text else None


class Inspector:
    """`syncstore-cli inspect` as a process; its first line is the page's URL."""

    def __init__(self, root, *args):
        self.proc = subprocess.Popen([CLI, "inspect", "--root", root, "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:"), f"inspect printed {line!r}: {self.proc.stderr.read()}"
        self.url = line
        self.base = line.split("/?", 1)[0]
        self.token = re.search(r"token=([0-9a-f]+)$", line).group(1)

    def get(self, path, token=True, headers=None):
        """(status, headers, json body) of a GET."""
        sep = "&" if "?" in path else "?"
        req = urllib.request.Request(self.base + path + (f"{sep}token={self.token}" if token else ""), headers=headers or {})
        return answer(req)

    def post(self, path, body, headers=None):
        req = urllib.request.Request(self.base + path, method="POST", data=json.dumps(body).encode(),
                                     headers=dict({"X-Inspector-Token": self.token, "Content-Type": "application/json"}, **(headers or {})))
        return answer(req)


def answer(req):
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read().decode()
            return r.status, r.headers, (json.loads(body) if r.headers.get("Content-Type", "").startswith("application/json") else body)
    except urllib.error.HTTPError as e:
        return e.code, e.headers, json.loads(e.read().decode() or "null")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The store (synced, with a conflict, HTML entries, a big soup, a global store) and an inspector on it."""
    tmp = tmp_path_factory.mktemp("inspector")
    root = str(tmp / "stores")
    (tmp / "userstore.json").write_text(json.dumps(USERSTORE))
    (tmp / "usersyncs.json").write_text(json.dumps(USERSYNCS))
    server = Served("--seed", f"Contact={CONTACTS}")
    slow = Served("--seed", "Contact=240", "--default-batch-size", "20", "--faults", "GET */query* latency=350")
    inspector = None
    try:
        ok("sync", "--root", root, "--url", server.url, "--token", TOKEN, "--store-config", str(tmp / "userstore.json"),
           "--sync-config", str(tmp / "usersyncs.json"), "--json")
        # A conflict: the server's copy changes after the local edit; the sync up leaves it dirty.
        entry = json.loads(ok("query", "--root", root, "select {contacts:_soup} from {contacts} order by {contacts:_soupEntryId} limit 1", "--json"))[0][0]
        server.request("PATCH", f"sobjects/Contact/{entry['Id']}", {"Title": "server side"})
        entry.update({"Title": "local side", "__local__": True, "__locally_updated__": True})
        ok("upsert", "--root", root, "--soup", "contacts", json.dumps(entry))
        # An error: a contact created offline without its required LastName, which the server refuses.
        refused = json.loads(ok("upsert", "--root", root, "--soup", "contacts", json.dumps(
            {"attributes": {"type": "Contact"}, "Title": "no name", "__local__": True, "__locally_created__": True})))[0]
        r = cli("sync", "--root", root, "--url", server.url, "--token", TOKEN, "contacts-up")
        assert r.returncode == 3, (r.stdout, r.stderr)
        ok("soup", "register", "--root", root, "notes", '[{"path":"title","type":"string"}]')
        ok("upsert", "--root", root, "--soup", "notes", "-", stdin=json.dumps([{"title": t, "body": t} for t in HOSTILE]))
        ok("soup", "register", "--root", root, "big", '[{"path":"n","type":"integer"}]')
        ok("upsert", "--root", root, "--soup", "big", "-", stdin=json.dumps([{"n": i} for i in range(BIG)]))
        ok("soup", "register", "--root", root, "--global", "--store", "shared", "settings", '[{"path":"key","type":"string"}]')
        ok("soup", "register", "--root", root, "scratch", '[{"path":"k","type":"string"}]')
        inspector = Inspector(root)
        yield {"root": root, "server": server, "slow": slow, "inspector": inspector, "conflict": entry, "refused": refused, "tmp": tmp}
    finally:
        if inspector:
            stop(inspector.proc)
        stop(server.proc)
        stop(slow.proc)


@pytest.fixture(scope="module")
def browser():
    for path in (CHROMIUM, CHROMEDRIVER):
        assert os.path.exists(path), f"{path} is missing: apt-get install chromium chromium-driver (scripts/setup.sh --dev does)"
    options = Options()
    options.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,860",
                "--no-first-run", "--disable-extensions", "--disable-background-networking"]:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def shot(driver, name):
    driver.save_screenshot(str(SHOTS / f"{name}.png"))


def wait(driver, condition, timeout=15, what="the page"):
    """Polls `condition`; one that read elements the page replaced meanwhile (a view re-rendered,
    a live update) is polled again."""
    return WebDriverWait(driver, timeout, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: condition(d), message=f"waiting for {what}")


def open_page(driver, inspector):
    driver.get(inspector.url)
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"), what="the page to load")


def tab(driver, name):
    driver.find_element(By.CSS_SELECTOR, f'button[data-tab="{name}"]').click()


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def run_sql(driver, sql, size=None, page=None):
    box = driver.find_element(By.ID, "sql")
    box.clear()
    box.send_keys(sql)
    if driver.find_element(By.ID, "suggest").is_displayed():
        box.send_keys(Keys.ESCAPE)
    for element_id, value in (("q-size", size), ("q-page", page)):
        if value is not None:
            field = driver.find_element(By.ID, element_id)
            field.clear()
            field.send_keys(str(value))
    driver.execute_script("document.getElementById('q-meta').textContent = ''; document.getElementById('q-error').hidden = true")
    if page is None:
        driver.find_element(By.ID, "run").click()
    else:
        box.send_keys(Keys.CONTROL, Keys.ENTER)
    wait(driver, lambda d: text(d, "q-meta") or d.find_element(By.ID, "q-error").is_displayed(), what="the query's answer")


def sync_row(driver, name):
    """{status, progress, cells, rate line, bar width} of a sync's row, read in one script (events replace rows)."""
    return driver.execute_script("""
        const row = document.querySelector('tr[data-sync="' + arguments[0] + '"]');
        if (!row) return null;
        return {status: row.dataset.status, progress: Number(row.dataset.progress),
                cells: [...row.querySelectorAll(':scope > td')].map((td) => td.innerText),
                line: row.querySelector('.progress .meta').innerText,
                bar: row.querySelector('.bar > div').style.width};""", name)


def row_cells(driver, css):
    """The cells' text of the row matching css, read in one script (tables are rebuilt on refresh); None if absent."""
    return driver.execute_script("""const row = document.querySelector(arguments[0]);
        return row ? [...row.querySelectorAll(':scope > td')].map((td) => td.innerText) : null;""", css)


def click(driver, css):
    driver.execute_script("document.querySelector(arguments[0]).click()", css)


def table_rows(driver, table_id):
    return driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")


# ---- the token, CORS, the Host check, writes

def test_every_request_needs_the_token_and_no_cors_is_given(world):
    ins = world["inspector"]
    assert re.fullmatch(r"[0-9a-f]{32}", ins.token)
    for path in ["/", "/app.js", "/api/stores", "/api/soups", "/api/query?sql=select%201", "/api/events"]:
        status, _, body = ins.get(path, token=False)
        assert status == 401 and body["error"]["code"] == "UNAUTHORIZED", (path, status, body)
    status, _, _ = ins.get("/api/soups?token=" + "0" * 32, token=False)
    assert status == 401
    status, headers, soups = ins.get("/api/soups", headers={"Origin": "http://evil.example"})
    assert status == 200 and {s["soupName"] for s in soups} >= {"contacts", "notes", "big", "syncs_soup"}
    assert not [h for h in headers.keys() if h.lower().startswith("access-control-")], dict(headers)
    # A name rebound to 127.0.0.1 is not this server, token or not.
    status, _, body = ins.get("/api/soups", headers={"Host": "evil.example:80"})
    assert status == 403, body
    status, _, syncs = ins.get("/api/syncs")
    assert status == 200 and [s["name"] for s in syncs][:2] == ["contacts-down", "contacts-up"], syncs
    status, headers, page = ins.get("/")
    assert status == 200 and "script-src 'self'" in headers["Content-Security-Policy"] and ins.token in page


def test_writes_are_refused_without_allow_writes_and_work_with_it(world, browser):
    ins = world["inspector"]
    before = ins.get("/api/query?sql=" + urllib.request.quote("select count(*) from {notes}"))[2]["totalEntries"]
    status, _, body = ins.post("/api/upsert", {"store": "smartstore", "soup": "notes", "entry": '{"title": "new"}'})
    assert status == 403 and body["error"]["code"] == "READ_ONLY" and "--allow-writes" in body["error"]["message"]
    status, _, body = ins.post("/api/delete", {"soup": "notes", "ids": "[1]"})
    assert status == 403
    count = json.loads(ok("query", "--root", world["root"], "select count(*) from {notes}", "--json"))[0][0]
    assert count == len(HOSTILE) and before == 1
    # A form post (no JSON, no token header) is refused before anything runs.
    req = urllib.request.Request(ins.base + f"/api/upsert?token={ins.token}", method="POST", data=b"soup=notes",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert answer(req)[0] == 415
    writer = Inspector(world["root"], "--allow-writes")
    try:
        status, _, body = writer.post("/api/upsert", {"soup": "notes", "entry": '{"title": "added by the inspector"}'})
        assert status == 200 and body[0]["title"] == "added by the inspector", body
        status, _, body = writer.post("/api/delete", {"soup": "notes", "ids": json.dumps([body[0]["_soupEntryId"]])})
        assert status == 200, body
        status, _, body = writer.post("/api/upsert", {"store": "shared", "global": True, "soup": "settings", "entry": '{"key": "theme"}'})
        assert status == 200 and body[0]["key"] == "theme", body
        status, _, body = writer.post("/api/upsert", {"soup": "notes", "entry": '{"title": "unclosed'})
        assert status == 400 and body["error"]["code"] == "ARGUMENT", body
        # The page's own upsert and delete, as a user does them.
        open_page(browser, writer)
        assert text(browser, "mode") == "writes allowed"
        tab(browser, "entries")
        Select(browser.find_element(By.ID, "e-soup")).select_by_value("notes")
        wait(browser, lambda d: text(d, "e-meta").startswith(f"{len(HOSTILE)} entries"), what="the notes")
        browser.find_element(By.ID, "e-json").send_keys('{"title": "typed in the page"}')
        browser.find_element(By.ID, "e-upsert").click()
        wait(browser, lambda d: text(d, "e-meta").startswith(f"{len(HOSTILE) + 1} entries"), what="the upserted entry")
        click(browser, "#e-table tbody tr:last-child button:last-child")
        wait(browser, lambda d: text(d, "e-meta").startswith(f"{len(HOSTILE)} entries"), what="the entry to go")
        # Smart SQL stays read-only there too.
        status, _, body = writer.get("/api/query?sql=" + urllib.request.quote("delete from {notes}"))
        assert status == 400 and "Smart SQL" in body["error"]["message"], body
    finally:
        stop(writer.proc)
    assert json.loads(ok("query", "--root", world["root"], "select count(*) from {notes}", "--json"))[0][0] == len(HOSTILE)
    assert json.loads(ok("query", "--root", world["root"], "--global", "--store", "shared", "select {settings:key} from {settings}", "--json")) == [["theme"]]


def test_ctrl_c_stops_it_at_once_while_a_page_follows_the_syncs(world):
    ins = Inspector(world["root"])
    try:
        events = urllib.request.urlopen(f"{ins.base}/api/events?token={ins.token}", timeout=10)
        assert events.readline().decode() == "event: syncs\n"
        assert json.loads(events.readline().decode()[len("data: "):])["syncs"][0]["name"] == "contacts-down"
        started = time.time()
        ins.proc.send_signal(signal.SIGINT)
        assert ins.proc.wait(timeout=10) == 0
        assert time.time() - started < 3, "the open event stream held the stop"
        events.close()
        # A store that cannot be read says why in the stream, as the page shows it.
        other = Inspector(world["root"])
        with urllib.request.urlopen(f"{other.base}/api/events?token={other.token}&store=nope", timeout=10) as bad:
            assert bad.readline().decode() == "event: syncs\n"
            data = json.loads(bad.readline().decode()[len("data: "):])
            assert data["error"]["code"] == "NOT_FOUND" and "No user store 'nope'" in data["error"]["message"] and data["now"] > 0
        stop(other.proc)
    finally:
        if ins.proc.poll() is None:
            ins.proc.kill()
            ins.proc.wait()


def test_a_wrong_store_or_key_fails_at_start_with_the_cli_exit_codes(world, tmp_path):
    r = cli("inspect", "--root", world["root"], "--store", "nope", "--port", "0", timeout=30)
    assert r.returncode == 66 and "No user store 'nope'" in r.stderr, (r.returncode, r.stderr)
    key = tmp_path / "k"
    key.write_text("some passphrase\n")
    r = cli("inspect", "--root", world["root"], "--key-file", str(key), "--kdf-iter", "1000", "--port", "0", timeout=30)
    assert r.returncode == 77 and "some passphrase" not in r.stderr, (r.returncode, r.stderr)


# ---- the page

def test_smart_sql_with_completion_paging_and_pretty_json(world, browser):
    open_page(browser, world["inspector"])
    box = browser.find_element(By.ID, "sql")
    box.clear()
    box.send_keys("select {con")
    wait(browser, lambda d: d.find_element(By.ID, "suggest").is_displayed(), what="soup suggestions")
    assert [li.text.split()[0] for li in browser.find_elements(By.CSS_SELECTOR, "#suggest li")] == ["contacts"]
    box.send_keys(Keys.TAB)
    assert box.get_attribute("value") == "select {contacts}"
    box.send_keys(Keys.BACKSPACE, ":")
    wait(browser, lambda d: d.find_element(By.ID, "suggest").is_displayed(), what="path suggestions")
    paths = [li.text.split() for li in browser.find_elements(By.CSS_SELECTOR, "#suggest li")]
    assert paths == [["_soup", "whole", "entry"], ["_soupEntryId", "id"], ["_soupLastModifiedDate", "ms"],
                     ["Id", "string"], ["LastName", "string"], ["__local__", "string"]], paths
    shot(browser, "query-completion")
    box.send_keys("Last")
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#suggest li")) == 1, what="the paths to narrow")
    box.send_keys(Keys.ENTER)
    assert box.get_attribute("value") == "select {contacts:LastName}"

    run_sql(browser, "select {contacts:LastName}, {contacts:_soup} from {contacts} order by {contacts:_soupEntryId}", size=25)
    assert text(browser, "q-meta").startswith(f"{ENTRIES} rows · 3 pages · page index 0 · 25 shown"), text(browser, "q-meta")
    rows = table_rows(browser, "q-table")
    assert len(rows) == 25
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#q-table th")]
    assert heads == ["LastName", "_soup"]
    pretty = rows[0].find_element(By.TAG_NAME, "pre").text
    assert pretty.startswith("{\n  ") and json.loads(pretty)["_soupEntryId"] == 1
    first_page = [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows]
    browser.find_element(By.ID, "q-next").click()
    wait(browser, lambda d: "page index 1 ·" in text(d, "q-meta"), what="page 1")
    second_page = [r.find_elements(By.TAG_NAME, "td")[0].text for r in table_rows(browser, "q-table")]
    assert len(second_page) == 25 and json.loads(table_rows(browser, "q-table")[0].find_element(By.TAG_NAME, "pre").text)["_soupEntryId"] == 26
    assert first_page != second_page
    run_sql(browser, "select {contacts:LastName}, {contacts:_soup} from {contacts} order by {contacts:_soupEntryId}", size=25, page=2)
    assert len(table_rows(browser, "q-table")) == ENTRIES - 50
    shot(browser, "query")


def test_hostile_smart_sql_is_refused_inline_with_the_library_error(world, browser):
    open_page(browser, world["inspector"])
    for sql in ["delete from {contacts}", "update {contacts} set {contacts:LastName} = 'x'",
                "attach database '/tmp/inspector-attached.db' as x", "select 1; drop table soup_attrs",
                "select * from pragma_table_info('soup_attrs')"]:
        run_sql(browser, sql)
        error = browser.find_element(By.ID, "q-error")
        assert error.is_displayed() and error.text.startswith("ARGUMENT: "), (sql, error.text)
        assert not table_rows(browser, "q-table")
    assert not os.path.exists("/tmp/inspector-attached.db")
    shot(browser, "query-refused")
    assert json.loads(ok("query", "--root", world["root"], "select count(*) from {contacts}", "--json"))[0][0] == ENTRIES


def test_a_huge_result_is_counted_and_paged_never_sent_whole(world, browser):
    open_page(browser, world["inspector"])
    huge = "select {big:n}, {contacts:LastName} from {big}, {contacts}"
    run_sql(browser, huge, size=1000)
    total = BIG * ENTRIES
    pages = -(-total // 1000)
    assert text(browser, "q-meta").startswith(f"{total} rows · {pages} pages · page index 0 · 1000 shown"), text(browser, "q-meta")
    assert len(table_rows(browser, "q-table")) == 1000
    run_sql(browser, huge, size=1000, page=pages - 1)
    assert len(table_rows(browser, "q-table")) == total - (pages - 1) * 1000
    run_sql(browser, huge, size=1000, page=pages + 50)  # past the end: the last page
    assert f"page index {pages - 1} ·" in text(browser, "q-meta")
    run_sql(browser, huge, size=100000)
    assert "Page size must be from 1 to 1000" in text(browser, "q-error")
    status, _, body = world["inspector"].get("/api/query?pageSize=1000000&sql=" + urllib.request.quote("select {big:n} from {big}"))
    assert status == 400 and "Page size" in body["error"]["message"]


def test_a_long_query_never_blocks_the_apps_writes_and_stops_at_its_time_limit(world):
    import threading
    ins = world["inspector"]
    ones = json.dumps(list(range(1000)))
    slow = f"select count(*) from {{big}}, {{contacts}}, {{notes}}, json_each('{ones}')"
    got = {}
    query = threading.Thread(target=lambda: got.update(answer=ins.get("/api/query?sql=" + urllib.request.quote(slow)),
                                                        ended=time.time()))
    started = time.time()
    query.start()
    time.sleep(0.5)
    writes = []
    for i in range(5):  # the app's writes meanwhile (another process, each its own transaction)
        t = time.time()
        ok("upsert", "--root", world["root"], "--soup", "scratch", json.dumps({"k": f"w{i}"}))
        writes.append(time.time() - t)
    query.join(timeout=30)
    status, _, body = got["answer"]
    assert status == 400 and "ran longer than 5000 ms and was stopped" in body["error"]["message"], body
    assert 4.5 < got["ended"] - started < 10, got["ended"] - started
    assert max(writes) < 2.5 and time.time() - started < 10, writes  # a write is a process start plus a commit
    assert json.loads(ok("query", "--root", world["root"], "select count(*) from {scratch}", "--json"))[0][0] == 5


def test_html_in_entries_is_shown_as_text_and_never_runs(world, browser):
    open_page(browser, world["inspector"])
    run_sql(browser, "select {notes:title}, {notes:_soup} from {notes}")
    cells = [r.find_elements(By.TAG_NAME, "td")[0].text for r in table_rows(browser, "q-table")]
    assert cells == HOSTILE
    tab(browser, "soups")
    wait(browser, lambda d: row_cells(d, 'tr[data-soup="notes"]'), what="the soups table")
    click(browser, 'tr[data-soup="notes"] button')
    wait(browser, lambda d: len(table_rows(d, "e-table")) == len(HOSTILE), what="the notes entries")
    assert browser.execute_script("return window.__pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main svg, main script")
    shown = browser.find_element(By.ID, "e-table").text
    assert all(json.dumps(h) in shown for h in HOSTILE), shown
    shot(browser, "entries-html-escaped")


def test_soups_with_counts_and_index_specs_and_store_facts(world, browser):
    open_page(browser, world["inspector"])
    tab(browser, "soups")
    row = wait(browser, lambda d: row_cells(d, 'tr[data-soup="contacts"]'), what="the soups table")
    assert row[:3] == ["contacts", str(ENTRIES), "2"], row
    assert row[3].split() == ["Id:string", "LastName:string", "__local__:string"]
    big = row_cells(browser, 'tr[data-soup="big"]')
    assert big[:3] == ["big", str(BIG), "0"] and big[3].split() == ["n:integer"], big
    shot(browser, "soups")
    tab(browser, "facts")
    wait(browser, lambda d: "SQLite" in text(d, "facts"), what="the store facts")
    facts = dict(zip([e.text for e in browser.find_elements(By.CSS_SELECTOR, "#facts dt")],
                     [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#facts dd")]))
    assert facts["Encrypted"] == "no" and facts["Opened"] == "read-only"
    assert re.fullmatch(r"3\.\d+\.\d+", facts["SQLite"]) and re.fullmatch(r"\d+\.\d+\.\d+", facts["SyncStore library"])
    assert re.fullmatch(r"[\d.]+ (B|KiB|MiB)", facts["Database file"]) and facts["File"].endswith("/user/smartstore.db")
    assert facts["WAL file"]
    shot(browser, "store-facts")


def test_the_store_picker_lists_user_and_global_stores(world, browser):
    open_page(browser, world["inspector"])
    picker = Select(browser.find_element(By.ID, "store"))
    groups = {g.get_attribute("label"): [o.text for o in g.find_elements(By.TAG_NAME, "option")]
              for g in browser.find_elements(By.CSS_SELECTOR, "#store optgroup")}
    assert groups == {"User stores": ["smartstore"], "Global stores": ["shared"]}
    picker.select_by_value("g:shared")
    tab(browser, "soups")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-soup="settings"]'), what="the global store's soups")
    assert not browser.find_elements(By.CSS_SELECTOR, 'tr[data-soup="contacts"]')


def test_a_conflict_links_to_its_entry_with_last_error_and_local_flags(world, browser):
    open_page(browser, world["inspector"])
    tab(browser, "syncs")
    up = wait(browser, lambda d: sync_row(d, "contacts-up"), what="the syncs")
    cells = up["cells"]
    assert cells[2:4] == ["syncUp", "contacts"] and cells[6] == "DONE", cells
    assert '"mergeMode": "LEAVE_IF_CHANGED"' in cells[5]
    assert "conflicts (1): " + str(world["conflict"]["_soupEntryId"]) in cells[8], cells[8]
    assert "errors (1): " + str(world["refused"]["_soupEntryId"]) in cells[8], cells[8]
    down = sync_row(browser, "contacts-down")["cells"]
    assert "SELECT Id, LastName" in down[4] and f"{CONTACTS} / {CONTACTS} records" in down[7], down
    shot(browser, "syncs")
    click(browser, 'tr[data-sync="contacts-up"] a.entry-link')
    wait(browser, lambda d: len(table_rows(d, "e-table")) == 1, what="the conflicting entry")
    entry_row = table_rows(browser, "e-table")[0]
    assert "dirty" in entry_row.get_attribute("class")
    cells = [td.text for td in entry_row.find_elements(By.TAG_NAME, "td")]
    assert cells[0] == str(world["conflict"]["_soupEntryId"])
    assert "local" in cells[1] and "locally updated" in cells[1]
    last_error = json.loads(entry_row.find_element(By.CSS_SELECTOR, "td.lasterror pre").text)
    assert last_error[0]["errorCode"] == "CONFLICT" and "the local change was not sent" in last_error[0]["message"], last_error
    shot(browser, "conflict-entry")
    # The error's link: the entry the server refused, with the server's answer.
    tab(browser, "syncs")
    wait(browser, lambda d: sync_row(d, "contacts-up"), what="the syncs")
    click(browser, 'tr[data-sync="contacts-up"] .ids:last-child a.entry-link')
    wait(browser, lambda d: [r.get_attribute("data-id") for r in table_rows(d, "e-table")] == [str(world["refused"]["_soupEntryId"])],
         what="the refused entry")
    cells = row_cells(browser, "#e-table tbody tr")
    assert "local" in cells[1] and "locally created" in cells[1], cells
    assert "REQUIRED_FIELD_MISSING" in cells[2] and "LastName" in cells[2], cells[2]


def test_the_soup_browser_pages_and_filters_by_an_indexed_path(world, browser):
    open_page(browser, world["inspector"])
    tab(browser, "entries")
    Select(browser.find_element(By.ID, "e-soup")).select_by_value("contacts")
    wait(browser, lambda d: text(d, "e-meta") == f"{ENTRIES} entries · 4 pages · page index 0", what="page 0")
    ids = [int(r.get_attribute("data-id")) for r in table_rows(browser, "e-table")]
    assert ids == list(range(1, 21))
    browser.find_element(By.ID, "e-next").click()
    wait(browser, lambda d: text(d, "e-meta") == f"{ENTRIES} entries · 4 pages · page index 1", what="page 1")
    assert [int(r.get_attribute("data-id")) for r in table_rows(browser, "e-table")] == list(range(21, 41))
    dirty = browser.find_elements(By.CSS_SELECTOR, "#e-table tr.dirty")
    assert not dirty  # the conflict is entry 1, on page 0
    Select(browser.find_element(By.ID, "e-path")).select_by_value("__local__")
    browser.find_element(By.ID, "e-value").send_keys("true")
    browser.find_element(By.ID, "e-go").click()
    wait(browser, lambda d: text(d, "e-meta") == "2 entries · 1 page · page index 0", what="the dirty entries")
    dirty = [int(r.get_attribute("data-id")) for r in table_rows(browser, "e-table")]
    assert dirty == [world["conflict"]["_soupEntryId"], world["refused"]["_soupEntryId"]]
    assert all("dirty" in r.get_attribute("class") for r in table_rows(browser, "e-table"))
    Select(browser.find_element(By.ID, "e-path")).select_by_value("LastName")
    field = browser.find_element(By.ID, "e-value")
    field.clear()
    field.send_keys(world["conflict"]["LastName"][:2] + "%")
    browser.execute_script("document.getElementById('e-meta').textContent = ''")
    browser.find_element(By.ID, "e-go").click()
    wait(browser, lambda d: re.match(r"\d+ entr", text(d, "e-meta")), what="the LIKE filter")
    names = [json.loads(r.find_element(By.CSS_SELECTOR, "td:nth-child(4) pre").text)["LastName"] for r in table_rows(browser, "e-table")]
    assert names and all(n.startswith(world["conflict"]["LastName"][:2]) for n in names)


def test_a_running_sync_in_another_process_moves_live(world, browser):
    open_page(browser, world["inspector"])
    tab(browser, "syncs")
    root = world["root"]
    # An app's sync: another process, the sync lock is its own (the inspector holds none).
    sync = subprocess.Popen([CLI, "sync", "--root", root, "--url", world["slow"].url, "--token", TOKEN,
                             "--soql", "SELECT Id, LastName, LastModifiedDate FROM Contact", "--soup", "live",
                             "--create-soup", "--name", "live-down"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    rate_seen = False
    try:
        deadline = time.time() + 40
        while time.time() < deadline:
            row = sync_row(browser, "live-down")
            if row:
                status, progress, line = row["status"], row["progress"], row["line"]
                if status == "RUNNING":
                    if 0 < progress < 100 and (not seen or seen[-1] != progress):
                        seen.append(progress)
                        if len(seen) == 2:
                            shot(browser, "sync-live")
                    rate_seen = rate_seen or bool(re.search(r"[1-9]\d* records/s", line))
                if status == "DONE":
                    break
            time.sleep(0.1)
        assert sync.wait(timeout=30) == 0, sync.stderr.read()
    finally:
        if sync.poll() is None:
            sync.kill()
    assert len(seen) >= 2 and seen == sorted(seen), f"progress seen while running: {seen}"
    assert rate_seen, "no records/s figure while running"
    row = wait(browser, lambda d: (sync_row(d, "live-down") or {}).get("status") == "DONE" and sync_row(d, "live-down"),
               what="the sync to end")
    assert "240 / 240 records" in row["line"] and row["bar"] == "100%", row


def shown_rows(driver, table_id):
    """The rows' text of a table, read in one script (a live refresh may rebuild it meanwhile)."""
    return driver.execute_script("return [...document.querySelectorAll('#' + arguments[0] + ' tbody tr')].map((r) => r.innerText)",
                                 table_id)


def test_the_open_view_follows_other_processes_writes_without_a_reload(world, browser):
    """The entries and the query on screen change when another process commits (the CLI's
    upsert, the Python package): the page follows the store's commits, no reload, no click."""
    import syncstore

    root = world["root"]
    ok("soup", "register", "--root", root, "feed", '[{"path":"name","type":"string"}]')
    ok("upsert", "--root", root, "--soup", "feed", json.dumps({"name": "first"}))
    open_page(browser, world["inspector"])
    browser.execute_script("window.__notReloaded = 1")
    tab(browser, "entries")
    Select(browser.find_element(By.ID, "e-soup")).select_by_value("feed")
    wait(browser, lambda d: text(d, "e-meta") == "1 entry · 1 page · page index 0", what="the feed soup")
    ok("upsert", "--root", root, "--soup", "feed", json.dumps({"name": "second"}))
    wait(browser, lambda d: text(d, "e-meta") == "2 entries · 1 page · page index 0", what="the other process's entry")
    entries = browser.execute_script("""return [...document.querySelectorAll('#e-table tbody tr td:nth-child(4) pre')]
        .map((pre) => pre.innerText)""")
    assert [json.loads(e)["name"] for e in entries] == ["first", "second"]
    shot(browser, "live-entries")

    tab(browser, "query")
    run_sql(browser, "select {feed:name} from {feed} order by {feed:name}")
    assert shown_rows(browser, "q-table") == ["first", "second"]
    with syncstore.Store(root, {"storeName": "smartstore"}) as store:
        store.upsert("feed", [{"name": "third"}])
        wait(browser, lambda d: shown_rows(d, "q-table") == ["first", "second", "third"],
             what="the query to run again")
        stored = store.query("feed", {"queryType": "exact", "indexPath": "name", "matchKey": "first", "pageSize": 5})
        store.remove("feed", [stored[0]["_soupEntryId"]])
        wait(browser, lambda d: shown_rows(d, "q-table") == ["second", "third"], what="the delete")
    live = browser.find_element(By.ID, "live")
    assert "feed changed at" in live.text and int(live.get_attribute("data-changes")) >= 3, live.text
    assert browser.execute_script("return window.__notReloaded") == 1
    shot(browser, "live-query")


def test_the_demo_keep_prints_an_inspect_command_that_works(browser):
    r = cli("demo", "--records", "20", "--keep", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("Look into it in a browser: syncstore-cli inspect --root ") and last.endswith(" --open"), last
    kept = re.search(r"--root (\S+)", last).group(1)
    try:
        args = last.split("syncstore-cli inspect ", 1)[1].split()
        args.remove("--open")  # no desktop here: the test's browser opens the URL instead
        proc = subprocess.Popen([CLI, "inspect", *args, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), proc.stderr.read()
            browser.get(url)
            wait(browser, lambda d: d.execute_script("return document.body.dataset.ready === '1'"), what="the demo's page")
            tab(browser, "facts")
            wait(browser, lambda d: "yes" in d.find_element(By.ID, "facts").text, what="the encrypted store's facts")
            key = (Path(kept) / "demo.key").read_text().strip()
            assert key not in browser.page_source
            tab(browser, "soups")
            wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-soup="contacts"]'), what="the demo's soups")
            tab(browser, "syncs")
            wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#syncs-table tbody tr"), what="the demo's syncs")
            shot(browser, "demo-syncs")
        finally:
            stop(proc)
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_the_hybrid_plugins_show_inspector_points_at_the_running_inspector(tmp_path):
    """pgShowInspector (smartstore.showInspector) answers the URL of the inspector running for the
    plugin's root, and says how to start one when none runs (or its process is gone)."""
    from syncstore.errors import StateError
    from syncstore.plugin import Plugin

    root = str(tmp_path / "stores")
    ok("soup", "register", "--root", root, "notes", '[{"path":"title","type":"string"}]')
    with Plugin(root) as plugin:
        def show():
            return plugin.exec("com.salesforce.smartstore", "pgShowInspector", ["pluginSDKVersion:13.0.2", {"isGlobalStore": False}])

        with pytest.raises(StateError) as none_running:
            show()
        assert f"syncstore-cli inspect --root '{root}' --store smartstore" in str(none_running.value)
        ins = Inspector(root)
        try:
            assert show() == {"url": ins.url}
            assert oct(os.stat(os.path.join(root, "inspector.json")).st_mode & 0o777) == "0o600"  # the URL carries the token
        finally:
            stop(ins.proc)
        with pytest.raises(StateError):
            show()
        # A record left by an inspector that was killed names a process that is gone.
        killed = Inspector(root)
        killed.proc.kill()
        killed.proc.wait()
        assert os.path.exists(os.path.join(root, "inspector.json"))
        with pytest.raises(StateError):
            show()


def live_box(driver):
    """{state, syncs, text, detail, start, stop} of the syncs view's live sync line, read in one script."""
    return driver.execute_script("""
        const box = document.getElementById('live-sync');
        return {state: box.dataset.state, syncs: box.dataset.syncs || '', text: document.getElementById('live-sync-text').innerText,
                detail: document.getElementById('live-sync-detail').innerText, hint: document.getElementById('live-sync-hint').innerText,
                start: !document.getElementById('live-start').hidden, stop: !document.getElementById('live-stop').hidden};""")


def test_the_syncs_view_shows_live_sync_started_from_the_page_live_then_offline(world, browser, tmp_path):
    # A read-only inspector: live sync is off, and the page says how to start it.
    status, _, live = world["inspector"].get("/api/live")
    assert status == 200 and live["state"] == "stopped" and live["names"] == [], live
    status, _, body = world["inspector"].post("/api/live/start", {})
    assert status == 403 and body["error"]["code"] == "READ_ONLY", body
    open_page(browser, world["inspector"])
    tab(browser, "syncs")
    box = wait(browser, lambda d: live_box(d)["hint"] and live_box(d), what="the live sync line")
    assert box["state"] == "stopped" and not box["start"] and not box["stop"] and "--allow-writes" in box["hint"], box

    server = Served("--seed", "Contact=3")
    root = str(tmp_path / "stores")
    ok("sync", "--root", root, "--url", server.url, "--token", TOKEN, "--store-config", str(world["tmp"] / "userstore.json"),
       "--sync-config", str(world["tmp"] / "usersyncs.json"), "--json")
    writes_only = Inspector(root, "--allow-writes")
    ins = None
    try:
        status, _, body = writes_only.post("/api/live/start", {})
        assert status == 400 and "--url and --token" in body["error"]["message"], body
        stop(writes_only.proc)
        ins = Inspector(root, "--allow-writes", "--url", server.url, "--token", TOKEN)
        open_page(browser, ins)
        tab(browser, "syncs")
        wait(browser, lambda d: live_box(d)["start"], what="the start button")
        click(browser, "#live-start")
        box = wait(browser, lambda d: live_box(d)["state"] == "live" and live_box(d), what="live sync to be live")
        assert box["text"] == "live" and box["stop"] and not box["start"], box
        assert sorted(box["syncs"].split(",")) == ["contacts-down", "contacts-up"] and "contacts-up" in box["detail"], box
        shot(browser, "live-sync-live")
        status, _, live = ins.get("/api/live")
        assert live["state"] == "live" and sorted(live["names"]) == ["contacts-down", "contacts-up"], live
        # Started again: refused (it is on), the library's STATE.
        status, _, body = ins.post("/api/live/start", {})
        assert status == 400 and body["error"]["code"] == "STATE", body
        # An app beside it (another process) writes: the inspector's live sync pushes it.
        ok("upsert", "--root", root, "--soup", "contacts", json.dumps(
            {"LastName": "Pushed live", "attributes": {"type": "Contact"}, "__local__": True, "__locally_created__": True}))
        deadline = time.time() + 30
        while "Pushed live" not in [r["LastName"] for r in server.request("GET", "query?q=SELECT+Id,LastName+FROM+Contact")["records"]]:
            assert time.time() < deadline, "the other process's write never reached the server"
            time.sleep(0.2)
        assert live_box(browser)["state"] == "live"

        # Pulling every 300 ms against a server that goes away: offline, the next retry counted down.
        click(browser, "#live-stop")
        wait(browser, lambda d: live_box(d)["state"] == "stopped", what="live sync to stop")
        status, _, live = ins.post("/api/live/start", {"options": {"pullIntervalMs": 300, "retryMinMs": 4000, "retryMaxMs": 8000}})
        assert status == 200, live
        wait(browser, lambda d: live_box(d)["state"] == "live", what="live sync to be live again")
        stop(server.proc)
        box = wait(browser, lambda d: live_box(d)["state"] == "offline" and live_box(d), timeout=30, what="live sync to be offline")
        assert box["text"] == "offline" and re.search(r"retry in \d+\.\d s", box["detail"]), box
        first = re.search(r"retry in (\d+\.\d) s", box["detail"]).group(1)
        wait(browser, lambda d: (m := re.search(r"retry in (\d+\.\d) s", live_box(d)["detail"])) and float(m.group(1)) < float(first),
             what="the countdown")
        shot(browser, "live-sync-offline")
        click(browser, "#live-stop")
        wait(browser, lambda d: live_box(d)["state"] == "stopped" and live_box(d)["start"], what="live sync to stop")
    finally:
        if writes_only.proc.poll() is None:
            stop(writes_only.proc)
        if ins:
            stop(ins.proc)
        if server.proc.poll() is None:
            stop(server.proc)
