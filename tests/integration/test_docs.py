"""The documentation's own checks: README.md stays short, every relative
Markdown link (and image) in README.md, doc/ and the bench READMEs points at
a file in the repository (and, for a #anchor into a Markdown file, at one of
its headings, by GitHub's slug rules), and the user documents carry no
issue numbers or commit hashes.  External http(s) links are not fetched.
Runs on the files alone, in well under a second."""

import os
import re
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 150

# [text](target) or ![alt](target); the target ends at whitespace or ')'.
LINK = re.compile(r'!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
# Reference-style definitions: [name]: target
REF_DEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$', re.M)
FENCE = re.compile(r'^(```|~~~)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
INLINE_CODE = re.compile(r'`+[^`]*`+')
# "#35", "# 35", "issue 18", "issues 5 and 6", "Issue #19"; not "#include",
# "#fff", "port 11211", "section 4.3" or a Markdown heading ("# Title").
ISSUE = re.compile(r'(?<![\w&/])(?:issues?\s*#?\s*\d+|#\s?\d+\b)', re.I)
# A commit id: 7 to 40 hex digits with at least one digit and one letter
# a-f, standing alone (not inside a longer word or number).
HASH = re.compile(r'(?<![\w.-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])')


def markdown_files():
    files = [ROOT / 'README.md']
    files += sorted((ROOT / 'doc').rglob('*.md'))
    files += sorted((ROOT / 'bench').rglob('README*.md'))
    return [f for f in files if f.is_file()]


def user_docs():
    """README.md and doc/*.md (the internals pages are held to it too)."""
    files = [ROOT / 'README.md'] + sorted((ROOT / 'doc').rglob('*.md'))
    return [f for f in files if f.is_file()]


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.split('\n'), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def slug(heading):
    """GitHub's anchor for a heading: lowercase, markup and punctuation
    removed, spaces to '-'."""
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # links: their text
    text = text.replace('`', '').lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


_anchor_cache = {}


def anchors(path):
    if path not in _anchor_cache:
        seen = {}
        result = set()
        for _, line in prose_lines(path.read_text(encoding='utf-8')):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            result.add(s if n == 0 else f'{s}-{n}')
        _anchor_cache[path] = result
    return _anchor_cache[path]


def links(path):
    text = path.read_text(encoding='utf-8')
    for n, line in prose_lines(text):
        line = INLINE_CODE.sub('', line)
        for m in LINK.finditer(line):
            yield n, m.group(1)
        for m in REF_DEF.finditer(line):
            yield n, m.group(1)


def is_external(target):
    return re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I) is not None


def broken_links(files):
    problems = []
    for f in files:
        for n, target in links(f):
            if is_external(target):
                continue
            where = f'{f.relative_to(ROOT)}:{n}: {target}'
            path_part, _, anchor = target.partition('#')
            dest = (f.parent / path_part).resolve() if path_part else f
            try:
                dest.relative_to(ROOT)
            except ValueError:
                problems.append(f'{where} (outside the repository)')
                continue
            if not dest.exists():
                problems.append(f'{where} (no such file)')
                continue
            if anchor and dest.suffix == '.md' and dest.is_file():
                if anchor.lower() not in anchors(dest):
                    problems.append(f'{where} (no heading with that anchor)')
    return problems


def references(files):
    """Issue numbers and commit hashes in prose (code blocks and inline
    code included: a hash in backquotes is still a hash; fences are not)."""
    problems = []
    for f in files:
        for n, line in prose_lines(f.read_text(encoding='utf-8')):
            if HEADING.match(line):
                line = HEADING.match(line).group(2)
            # Link targets may name upstream issues by URL; their text may not.
            line = re.sub(r'\]\([^)]*\)', ']', line)
            for m in ISSUE.finditer(line):
                problems.append(f'{f.relative_to(ROOT)}:{n}: issue reference {m.group(0)!r}')
            for m in HASH.finditer(line):
                problems.append(f'{f.relative_to(ROOT)}:{n}: commit hash {m.group(0)!r}')
    return problems


class TestDocs(unittest.TestCase):
    def test_readme_is_short(self):
        lines = (ROOT / 'README.md').read_text(encoding='utf-8').count('\n')
        self.assertLessEqual(lines, README_MAX_LINES,
                             f'README.md has {lines} lines; move detail to doc/')

    def test_relative_links_resolve(self):
        files = markdown_files()
        self.assertIn(ROOT / 'README.md', files)
        problems = broken_links(files)
        self.assertEqual(problems, [], 'broken links:\n' + '\n'.join(problems))

    def test_user_docs_have_no_issue_numbers_or_hashes(self):
        problems = references(user_docs())
        self.assertEqual(problems, [], '\n'.join(problems))


class TestCheckers(unittest.TestCase):
    """The checkers themselves, on made-up text, so that they can fail."""

    def test_slug(self):
        self.assertEqual(slug("Configuration in mcrouter's JSON"), 'configuration-in-mcrouters-json')
        self.assertEqual(slug('`stats` under segments'), 'stats-under-segments')
        self.assertEqual(slug('Miss ratios at equal memory: slabs and segments'),
                         'miss-ratios-at-equal-memory-slabs-and-segments')

    def test_issue_pattern(self):
        for bad in ('see #35', 'issue 18', '(issue 19)', 'Issues 5', 'issue #7', 'goal # 12'):
            self.assertTrue(ISSUE.search(bad), bad)
        for good in ('#include <stdio.h>', 'colour #fff', 'port 11211', 'section 4.3',
                     '§4.1', 'a [link](#anchor-2)', 'at most 64 keys', 'O#'):
            self.assertFalse(ISSUE.search(good), good)

    def test_hash_pattern(self):
        for bad in ('tree 6e4145b', 'at 81361a9,', '(efd40af)', 'commit 0b1305fdeadbeef12'):
            self.assertTrue(HASH.search(bad), bad)
        for good in ('1000000 items', 'deadbeef', 'version 1.6.18', 'key:000000000042',
                     '0x80', 'MurmurHash64A', 'murmur3_32', 'mrc-zipf09.svg'):
            self.assertFalse(HASH.search(good), good)


if __name__ == '__main__':
    unittest.main()
