#!/usr/bin/env python3
"""Docs cannot drift: every SQL example of README.md, docs/*.md and
studies/README.md still runs, and prints what the docs show. Run it through
test/docs_examples.sh (TAP, against the lab of scripts/lab env).

Every fenced block of those pages is one of:

- a function synopsis (its first line starts with `storlab.`): every
  `storlab.NAME(` at the start of one of its lines, or after CALL, must be a
  function or procedure of the installed extension;
- an example marked, on the line right before its fence,
  `<!-- example: not run: REASON -->` (shell commands, output of make bench
  or make studies, anything that needs root, the studies lab or minutes):
  counted and reported as a TAP skip with its reason;
- an SQL example: statements (psql prompts `db=#`/`db-#` optional, each
  ending with `;` or a psql `\\g...` command), each followed by the output the
  docs show. Each is either found with that same output in a pg_regress
  expected/*.out (then it is checked there, whole), or run against the lab
  and compared:
    * command tags (CREATE TABLE, INSERT 0 5, CALL ...) exactly;
    * a result table's column names exactly, in order (expanded `-[ RECORD`
      output: the field names), every documented row having as many cells as
      the header, the same number of rows as the docs show (unless the block
      is marked `<!-- example: rows vary: REASON -->`), and every column the
      docs show as numbers still numeric;
    * the whole output, line for line, when the block is marked
      `<!-- example: exact -->`;
    * no ERROR unless the docs show that ERROR (NOTICE, WARNING, HINT and
      DETAIL lines are not compared: their order against the result is not
      stable).
  An unmarked block that holds no statement fails: mark it.

Each page runs in a fresh database of its own (storlab_docs_<page>), with
the extension created (README.md creates it itself) and then
test/docs/<page>.setup.sql if there is one (the tables and stored results
its examples read, and job ids set to the ones the page shows); a block
marked `<!-- example: setup: FILE -->` has FILE run right before it. Pages
run at the same time (STORLAB_DOCS_PARALLEL, 8).

Most examples read the same on every major, so make test runs them all only
in the default major's pass. A block whose output depends on the major
(rows one major adds, another's defaults) is marked
`<!-- example: every major: REASON -->`; with STORLAB_DOCS_EVERY_MAJOR=1
only the pages holding such a block run, each up to its last marked block
(the examples before it set up what it reads), and the rest are skips. Probes' scratch files are kept small
(storlab.suite_file_size = 16MB) and run for a tenth of the durations
the examples name (shorter_probes): figures change, shapes do not.
"""
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_BIN = os.environ.get('PG_BIN', '/usr/lib/postgresql/15/bin')
PSQL = os.path.join(PG_BIN, 'psql')
PAGES = (['README.md'] + sorted(glob.glob('docs/*.md', root_dir=ROOT)) + ['studies/README.md'])
if os.environ.get('STORLAB_DOCS_PAGES'):  # e.g. STORLAB_DOCS_PAGES='README.md docs/relocate.md'
    PAGES = os.environ['STORLAB_DOCS_PAGES'].split()
PARALLEL = int(os.environ.get('STORLAB_DOCS_PARALLEL', '8'))

MARK = re.compile(r'^<!-- example: (not run|rows vary|exact|setup|every major)(?:: (.*?))? -->$')
EVERY_MAJOR_ONLY = os.environ.get('STORLAB_DOCS_EVERY_MAJOR') == '1'
PROMPT = re.compile(r'^\w+[=\-(\'"]# ?')
KEYWORD = re.compile(r'^(SELECT|WITH|CALL|CREATE|ALTER|COMMENT|INSERT|UPDATE|DELETE|DROP|SET|RESET|'
                     r'BEGIN|COMMIT|ROLLBACK|VACUUM|ANALYZE|CHECKPOINT|TABLE|EXPLAIN|GRANT|REVOKE|'
                     r'SHOW|VALUES|DO|LOCK)\b', re.I)
TAG = re.compile(r'^(CREATE [A-Z]+( [A-Z]+)?|ALTER [A-Z]+( [A-Z]+)?|DROP [A-Z]+( [A-Z]+)?|INSERT \d+ \d+|'
                 r'UPDATE \d+|DELETE \d+|SELECT \d+|COPY \d+|COMMENT|CALL|SET|RESET|VACUUM|ANALYZE|'
                 r'CHECKPOINT|BEGIN|COMMIT|ROLLBACK|GRANT|REVOKE|LOCK TABLE|DO)$')
MESSAGE = re.compile(r'^(NOTICE|WARNING|HINT|DETAIL|CONTEXT|INFO|LOG):')
DASHES = re.compile(r'^-+(\+-+)*$')
FOOTER = re.compile(r'^\((\d+) rows?\)$')
NUMBER = re.compile(r'^-?\d+(\.\d+)?(e[+-]?\d+)?$')


class Block:
    def __init__(self, page, line, info, body, marks):
        self.page, self.line, self.info, self.body, self.marks = page, line, info, body, marks
        self.where = '%s:%d' % (page, line)


def blocks(page):
    """The fenced blocks of a page, each with the example markers right before it."""
    lines = open(os.path.join(ROOT, page)).read().split('\n')
    out, i, pending, problems = [], 0, {}, []
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if m:
            if m.group(1) in ('not run', 'rows vary', 'every major') and not (m.group(2) or '').strip():
                problems.append('%s:%d: marker without a reason' % (page, i + 1))
            if m.group(1) == 'setup' and not os.path.isfile(os.path.join(ROOT, (m.group(2) or '').strip())):
                problems.append('%s:%d: no setup file %r' % (page, i + 1, m.group(2)))
            pending[m.group(1)] = m.group(2) or ''
        elif lines[i].startswith('```'):
            j = i + 1
            while j < len(lines) and not lines[j].startswith('```'):
                j += 1
            out.append(Block(page, i + 1, lines[i][3:].strip(), lines[i + 1:j], pending))
            pending, i = {}, j
        elif lines[i].strip() and pending:
            problems.append('%s:%d: an example marker not right before a fenced block' % (page, i + 1))
            pending = {}
        i += 1
    return out, problems


def split_statements(body):
    """[(statement, [output lines])] of an example block."""
    items, stmt, out, state = [], None, [], 'out'
    for raw in body:
        line = raw.rstrip()
        prompted = PROMPT.match(line)
        text = PROMPT.sub('', line) if prompted else line
        code = re.sub(r'\s+--.*$', '', text).rstrip()
        if state == 'stmt':
            stmt.append(text)
            if code.endswith(';') or re.search(r'\\g\w*( .*)?$', code) or (code.startswith('\\') and len(stmt) == 1):
                state = 'out'
            continue
        starts = (prompted and text.strip()) or (
            (KEYWORD.match(text) and not TAG.match(text)) or text.startswith('\\') or text.startswith('-- '))
        if starts and not MESSAGE.match(text):
            if stmt is not None:
                items.append(('\n'.join(stmt), out))
            stmt, out = [text], []
            if text.startswith('-- '):
                state = 'stmt'
                continue
            state = 'stmt'
            if code.endswith(';') or re.search(r'\\g\w*( .*)?$', code) or code.startswith('\\'):
                state = 'out'
        else:
            if stmt is None:
                return None  # output before any statement: not an example
            out.append(line)
    if stmt is not None:
        items.append(('\n'.join(stmt), out))
    # a leading comment line belongs to the statement after it
    return [(s, o) for s, o in items if re.sub(r'(?m)^--.*$', '', s).strip()] or None


def result(lines):
    """What a piece of psql output shows: tags, tables, errors, and its lines."""
    lines = [l.rstrip() for l in lines]
    res = {'tags': [], 'tables': [], 'errors': [],
           'lines': [l for l in lines if l.strip() and not MESSAGE.match(l)]}
    i = 0
    while i < len(lines):
        l = lines[i]
        if not l.strip() or MESSAGE.match(l):
            i += 1
        elif l.startswith('ERROR:'):
            res['errors'].append(l)
            i += 1
        elif TAG.match(l):
            res['tags'].append(l)
            i += 1
        elif l.startswith('-[ RECORD'):
            names, rows = [], 0
            while i < len(lines) and lines[i].strip():
                if lines[i].startswith('-[ RECORD'):
                    rows += 1
                elif rows == 1:
                    names.append(lines[i].split('|')[0].strip())
                i += 1
            res['tables'].append({'header': names, 'rows': [], 'count': rows})
        elif i + 1 < len(lines) and DASHES.match(lines[i + 1].strip()):
            header = [c.strip() for c in l.split('|')]
            rows, count = [], None
            i += 2
            while i < len(lines):
                f = FOOTER.match(lines[i].strip())
                if f:
                    count = int(f.group(1))
                    i += 1
                    break
                if not lines[i].strip() or MESSAGE.match(lines[i]) or lines[i].startswith('ERROR:'):
                    break
                rows.append([c.strip() for c in lines[i].split('|')])
                i += 1
            res['tables'].append({'header': header, 'rows': rows,
                                  'count': count if count is not None else len(rows)})
        else:
            i += 1
    return res


def compare(doc_lines, actual_lines, marks, expanded):
    """Problems found comparing what the docs show with what psql printed."""
    doc, act = result(doc_lines), result(actual_lines)
    problems = []
    for e in act['errors']:
        if e not in doc['errors']:
            problems.append('psql printed %s' % e)
    for e in doc['errors']:
        if e not in act['errors']:
            problems.append('the docs show %s, psql printed no such error' % e)
    if doc['tags'] != act['tags'] and doc['tags']:
        problems.append('command tags: the docs show %s, psql printed %s' % (doc['tags'], act['tags']))
    if len(doc['tables']) > len(act['tables']):
        problems.append('the docs show %d result(s), psql printed %d' % (len(doc['tables']), len(act['tables'])))
    for d, a in zip(doc['tables'], act['tables']):
        if d['header'] != a['header']:
            problems.append('columns: the docs show %s, psql printed %s' % (d['header'], a['header']))
            continue
        for r in d['rows']:
            if len(r) != len(d['header']):
                problems.append('a documented row has %d cells for %d columns: %s' % (len(r), len(d['header']), ' | '.join(r)))
        if 'rows vary' not in marks and d['count'] != a['count']:
            problems.append('rows: the docs show %d, psql printed %d' % (d['count'], a['count']))
        for c, name in enumerate(d['header']):
            shown = [r[c] for r in d['rows'] if c < len(r) and r[c]]
            if shown and all(NUMBER.match(v) for v in shown):
                bad = [r[c] for r in a['rows'] if c < len(r) and r[c] and not NUMBER.match(r[c])]
                if bad:
                    problems.append('column %s: the docs show numbers, psql printed %r' % (name, bad[0]))
    if 'exact' in marks and not problems:
        if doc['lines'] != act['lines']:
            problems.append('exact: the docs show\n%s\npsql printed\n%s' % ('\n'.join(doc['lines']), '\n'.join(act['lines'])))
    return problems


def norm(s):
    return re.sub(r'\s+', ' ', s).strip()


EXPECTED = None


def in_expected(stmt, out):
    """The expected/*.out file holding this statement followed by this very output."""
    global EXPECTED
    if EXPECTED is None:
        EXPECTED = {f: norm(open(os.path.join(ROOT, f)).read()) for f in sorted(glob.glob('expected/*.out', root_dir=ROOT))}
    text = norm(stmt + '\n' + '\n'.join(out))
    if not [l for l in out if l.strip()]:
        return None
    for f, content in EXPECTED.items():
        if text in content:
            return f
    return None


MEASURING = re.compile(r'storlab\.(probe|profile|fsync_cost|compare_tablespaces|check|baseline|regressions|'
                       r'measure_volume|measure_tablespaces)\s*\(')


def shorter_probes(stmt):
    """A call that measures probes for a tenth of the durations it names
    ('2 s' runs as '200 ms'): the docs show what a DBA runs, the test checks
    the shape of what it prints, and the figures change anyway. A statement
    whose documented output is an ERROR keeps its durations (a time bound's
    54000 depends on them)."""
    if not MEASURING.search(stmt):
        return stmt
    return re.sub(r"'(\d+(?:\.\d+)?) ?(?:s|sec|second|seconds)'",
                  lambda m: "'%g ms'" % (float(m.group(1)) * 100), stmt)


def psql(db, script_text, name):
    path = os.path.join(ROOT, 'target', 'docs_examples', name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(script_text)
    env = dict(os.environ)
    env['PGOPTIONS'] = (env.get('PGOPTIONS', '') + ' -c storlab.suite_file_size=16MB').strip()
    p = subprocess.run([PSQL, '-X', '-d', db, '-v', 'ON_ERROR_STOP=0', '-P', 'pager=off', '-f', path],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    return p.stdout, p.stderr, path


def admin(sql):
    p = subprocess.run([PSQL, '-X', '-q', '-d', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', sql],
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr)


def run_page(page, examples):
    """Runs a page's examples in a fresh database; [(block, problems)]."""
    started = time.monotonic()
    slug = re.sub(r'\W+', '_', page.replace('.md', '')).lower()
    db = 'storlab_docs_' + slug
    admin('DROP DATABASE IF EXISTS %s' % db)
    admin('CREATE DATABASE %s' % db)
    script, plan, line = [], [], 0
    setup = os.path.join('test', 'docs', slug.replace('docs_', '') + '.setup.sql')
    if page != 'README.md':
        script.append('SET client_min_messages = warning;\nCREATE EXTENSION storlab;\nRESET client_min_messages;')
    if os.path.exists(os.path.join(ROOT, setup)):
        script.append('\\echo @@docs setup\n\\i %s' % setup)
    for b, items in examples:
        if 'setup' in b.marks:
            script.append('\\echo @@docs setup\n\\i %s' % b.marks['setup'].strip())
        for k, (stmt, out) in enumerate(items):
            expanded = any(l.startswith('-[ RECORD') for l in out)
            chunk = '\\echo @@docs %d %d\n' % (len(plan), k)
            body = stmt if re.search(r'(;|\\g\w*( .*)?)\s*(--[^\n]*)?$', stmt) or stmt.startswith('\\') else stmt + ';'
            if not any('ERROR' in l for l in out):
                body = shorter_probes(body)
            chunk += ('\\x on\n' if expanded else '') + body + ('\n\\x off' if expanded else '')
            script.append(chunk)
        plan.append(b)
    text = '\n'.join(script) + '\n'
    stdout, stderr, path = psql(db, text, slug + '.sql')
    # statement boundaries in the script, to give each stderr ERROR to its statement
    starts, n = [], 0
    for i, l in enumerate(text.split('\n'), 1):
        m = re.match(r'^\\echo @@docs (\d+) (\d+)$', l)
        if m:
            starts.append((i, int(m.group(1)), int(m.group(2))))
        elif l == '\\echo @@docs setup':
            starts.append((i, -1, 0))
    errors = {}
    for l in stderr.split('\n'):
        m = re.match(r'^psql:[^:]+:(\d+): (ERROR:.*)$', l)
        if m:
            ln = int(m.group(1))
            owner = max((s for s in starts if s[0] <= ln), default=(0, -1, 0))
            errors.setdefault((owner[1], owner[2]), []).append(m.group(2))
    outputs, cur = {}, None
    for l in stdout.split('\n'):
        m = re.match(r'^@@docs (\d+) (\d+)$', l)
        if m:
            cur = (int(m.group(1)), int(m.group(2)))
            outputs[cur] = []
        elif l == '@@docs setup':
            cur = (-1, 0)
            outputs[cur] = []
        elif cur is not None:
            outputs[cur].append(l)
    results = []
    if (-1, 0) in errors:
        results.append((None, ['setup: %s' % e for e in errors[(-1, 0)]]))
    for bi, (b, items) in enumerate(examples):
        problems = []
        for k, (stmt, out) in enumerate(items):
            actual = outputs.get((bi, k), []) + errors.get((bi, k), [])
            expanded = any(l.startswith('-[ RECORD') for l in out)
            for p in compare(out, actual, b.marks, expanded):
                problems.append('%s\n  %s' % (stmt.split('\n')[0][:100], p))
        results.append((b, problems))
    if os.environ.get('STORLAB_KEEP_DOCS_DB') != '1':
        admin('DROP DATABASE IF EXISTS %s' % db)
    print('# %s: %.0f s' % (page, time.monotonic() - started), flush=True)
    return results


def main():
    tests = []      # (ok, description, diagnostics, skip reason)
    by_page, synopses = {}, []
    counts = {'synopsis': 0, 'expected': 0, 'run': 0, 'not run': 0}
    for page in PAGES:
        bl, problems = blocks(page)
        for p in problems:
            tests.append((False, p, [], None))
        if EVERY_MAJOR_ONLY:
            marked = [i for i, b in enumerate(bl) if 'every major' in b.marks]
            if not marked:
                tests.append((True, page, [], 'no example marked every major: the default major runs them'))
                continue
            bl = bl[:marked[-1] + 1]
        for b in bl:
            if 'not run' in b.marks:
                counts['not run'] += 1
                tests.append((True, b.where, [], 'not run: ' + b.marks['not run']))
                continue
            first = next((l for l in b.body if l.strip()), '')
            if first.startswith('storlab.'):
                counts['synopsis'] += 1
                synopses.append(b)
                continue
            items = split_statements(b.body)
            if not items:
                tests.append((False, '%s: a block that is neither an SQL example nor a synopsis; '
                               'mark it <!-- example: not run: REASON -->' % b.where, [], None))
                continue
            where = [in_expected(s, o) for s, o in items]
            if all(where):
                counts['expected'] += 1
                tests.append((True, '%s: as in %s' % (b.where, ', '.join(sorted(set(where)))), [], None))
                continue
            by_page.setdefault(page, []).append((b, items))
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        futures = {page: pool.submit(run_page, page, ex) for page, ex in by_page.items()}
        for page in by_page:
            for b, problems in futures[page].result():
                if b is None:
                    tests.append((False, '%s: setup failed' % page, problems, None))
                    continue
                counts['run'] += 1
                how = 'exact' if 'exact' in b.marks else 'columns and shape'
                tests.append((not problems, '%s: ran on the lab (%s)' % (b.where, how), problems, None))
    # synopses: the functions they name exist (the same on every major)
    if synopses and not EVERY_MAJOR_ONLY:
        admin('DROP DATABASE IF EXISTS storlab_docs_synopsis')
        admin('CREATE DATABASE storlab_docs_synopsis')
        out, err, _ = psql('storlab_docs_synopsis', 'SET client_min_messages = warning;\nCREATE EXTENSION storlab;\n'
                           "\\pset tuples_only on\n\\pset format unaligned\n"
                           "SELECT proname FROM pg_proc WHERE pronamespace = 'storlab'::regnamespace;\n", 'synopsis.sql')
        admin('DROP DATABASE IF EXISTS storlab_docs_synopsis')
        names = set(out.split())
        for b in synopses:
            named = re.findall(r'(?m)^\s*(?:CALL )?storlab\.(\w+)\(', '\n'.join(b.body))
            missing = sorted(set(n for n in named if n not in names))
            tests.append((not missing and bool(named), '%s: synopsis of %s' % (b.where, ', '.join(named) or 'nothing'),
                          ['no such function: storlab.%s' % m for m in missing], None))
    print('1..%d' % len(tests))
    failed = 0
    for i, (ok, desc, diag, skip) in enumerate(tests, 1):
        if skip:
            print('ok %d - %s # SKIP %s' % (i, desc, skip))
            continue
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, desc))
        if not ok:
            failed += 1
        for d in diag:
            for l in d.split('\n'):
                print('#   ' + l)
    print('# %d examples ran on the lab, %d found in expected/*.out, %d synopses checked, %d marked not run; %d failed'
          % (counts['run'], counts['expected'], counts['synopsis'], counts['not run'], failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
