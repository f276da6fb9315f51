"""The manual pages in man/ against the programs they describe.

For each program, the options its -h lists (short and long forms) must
all appear in its page, and every option its page's OPTIONS section
documents must be one -h lists: a flag added to a program without a line
in its page fails here, and so does a page that documents a flag the
program no longer has.  cellard's -o suboptions are held to the same
rule against the page's EXTENDED OPTIONS section.  Every page must
render with `groff -ww -man -Tutf8` without a warning, and libcellar(3)
must name every function include/cellar.h exports.

Both sides are read the same way: a line of -h output, or of the page
rendered as plain text, whose first non-blank character (within the first
ten columns) is a '-' followed by a letter or '-' lists options, written
as `-x`, `--name`, `--name=ARG`, `-x ARG`, separated by ', ' or '/'.
Description lines are indented further, so an option named in prose does
not count as a listed one.

The binaries come from the variables make integration sets (CELLARD,
CELLAR_ROUTER, CELLAR_SQUEAL, CELLAR_BENCH, CELLAR_RING); cellar-sim from
CELLAR_SIM, else next to CELLARD, as test_sim.py finds it.  groff is
required (make deps installs groff-base): without it the tests fail.
"""
import os
import re
import shutil
import subprocess

import pytest

from util import CELLARD

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAN = os.path.join(ROOT, "man")
HEADER = os.path.join(ROOT, "include", "cellar.h")


def _near_cellard(name):
    return os.path.join(os.path.dirname(CELLARD), name)


# program -> (environment variable, page, fewest options its -h must list)
PROGRAMS = {
    "cellard": ("CELLARD", "cellard.1", 40),
    "cellar-router": ("CELLAR_ROUTER", "cellar-router.1", 20),
    "cellar-squeal": ("CELLAR_SQUEAL", "cellar-squeal.1", 15),
    "cellar-sim": ("CELLAR_SIM", "cellar-sim.1", 20),
    "cellar-bench": ("CELLAR_BENCH", "cellar-bench.1", 30),
    "cellar-ring": ("CELLAR_RING", "cellar-ring.1", 0),
}


def binary(prog):
    var = PROGRAMS[prog][0]
    path = os.environ.get(var) or _near_cellard(prog)
    assert os.path.basename(path) == prog or var == "CELLARD", (var, path)
    assert os.path.isfile(path) and os.access(path, os.X_OK), \
        "%s=%s is not an executable (make integration sets it)" % (var, path)
    return path


def usage(prog):
    """What `prog -h` prints, stdout and stderr together (cellar-ring has
    no options: it prints its usage line on stderr and exits 2)."""
    r = subprocess.run([binary(prog), "-h"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30)
    assert r.returncode == (2 if prog == "cellar-ring" else 0), (prog, r.returncode, r.stdout)
    return r.stdout


def groff():
    path = shutil.which("groff")
    assert path, "groff is missing (apt-get install groff-base; make deps lists it)"
    return path


def render(page):
    """The page as plain ASCII text on lines long enough never to break
    an option or hyphenate it: \\- and hyphens are '-', no bold."""
    r = subprocess.run([groff(), "-man", "-Tascii", "-P-cbou", "-rLL=400n", "-rHY=0",
                        os.path.join(MAN, page)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (page, r.stderr)
    return re.sub(r".\x08", "", r.stdout)


_OPT = re.compile(r"(--?[A-Za-z0-9][A-Za-z0-9_-]*)(?:=\S+| (?!-)[^\s,]+)?")
_SEP = re.compile(r"\s*[,/]\s*(?=-)")


def listed_options(text):
    """The options listed at the start of text's lines (see the docstring)."""
    found = set()
    for line in text.splitlines():
        m = re.match(r"( {0,10})(?=-[-A-Za-z])", line)
        if not m:
            continue
        pos = m.end()
        while True:
            o = _OPT.match(line, pos)
            if not o:
                break
            found.add(o.group(1))
            s = _SEP.match(line, o.end())
            if not s:
                break
            pos = s.end()
    return found


def listed_suboptions(text):
    """cellard -h's -o suboptions: lines `   - name:`."""
    return set(re.findall(r"^ +- ([a-z][a-z0-9_]*):", text, re.M))


def section(rendered, title):
    """The body of one section (SH title) of a rendered page, '' if none."""
    m = re.search(r"^%s\n(.*?)(?=^\S|\Z)" % re.escape(title), rendered, re.S | re.M)
    return m.group(1) if m else ""


def mentions(text, word):
    """word appears in text as a whole token (not inside a longer option)."""
    return re.search(r"(?<![A-Za-z0-9_-])%s(?![A-Za-z0-9_])" % re.escape(word), text) is not None


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_help_options_are_in_the_page(prog):
    """Every option -h lists appears in the page."""
    opts = listed_options(usage(prog))
    assert len(opts) >= PROGRAMS[prog][2], (prog, sorted(opts))
    text = render(PROGRAMS[prog][1])
    missing = sorted(o for o in opts if not mentions(text, o))
    assert not missing, "%s: -h lists options its page does not: %s" % (prog, missing)


@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_page_options_are_in_help(prog):
    """Every option the page's OPTIONS section lists is one -h lists."""
    helped = listed_options(usage(prog))
    body = section(render(PROGRAMS[prog][1]), "OPTIONS")
    documented = listed_options(body)
    if PROGRAMS[prog][2]:
        assert len(documented) >= PROGRAMS[prog][2], (prog, sorted(documented))
    extra = sorted(documented - helped)
    assert not extra, "%s: the page documents options -h does not list: %s" % (prog, extra)


def test_cellard_suboptions():
    """cellard's -o suboptions: every one -h lists is in the page, and
    every one the page's EXTENDED OPTIONS section lists is in -h."""
    helped = listed_suboptions(usage("cellard"))
    assert len(helped) >= 30, sorted(helped)
    text = render("cellard.1")
    missing = sorted(s for s in helped if not mentions(text, s))
    assert not missing, "cellard -h lists -o suboptions its page does not: %s" % missing
    body = section(text, "EXTENDED OPTIONS")
    documented = set(re.findall(r"^ {1,10}([a-z][a-z0-9_]*)(?:=| |$)", body, re.M))
    assert len(documented) >= 30, sorted(documented)
    extra = sorted(documented - helped)
    assert not extra, "cellard's page documents -o suboptions -h does not list: %s" % extra


def pages():
    assert os.path.isdir(MAN), MAN
    return sorted(p for p in os.listdir(MAN) if re.search(r"\.[1-8]$", p))


def test_every_page_is_there():
    have = pages()
    for prog, (_, page, _) in PROGRAMS.items():
        assert page in have, "no manual page for %s" % prog
    assert "libcellar.3" in have


def test_pages_render_without_warnings():
    """groff -ww -man -Tutf8: exit 0, nothing on stderr, for every page;
    each has NAME, SYNOPSIS, DESCRIPTION and SEE ALSO."""
    for page in pages():
        r = subprocess.run([groff(), "-ww", "-man", "-Tutf8", os.path.join(MAN, page)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stderr == "", (page, r.returncode, r.stderr)
        text = render(page)
        for title in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"):
            assert section(text, title).strip(), (page, title)


def test_libcellar_names_every_function():
    """Every function and struct include/cellar.h exports is in libcellar(3)."""
    with open(HEADER) as f:
        header = f.read()
    funcs = set(re.findall(r"CELLAR_API\s+[^;(]*?\b(cellar_[a-z_]+)\s*\(", header))
    structs = set(re.findall(r"^struct (cellar_[a-z_]+)\s*[{;]", header, re.M))
    assert len(funcs) >= 45, sorted(funcs)
    text = render("libcellar.3")
    missing = sorted(n for n in funcs | structs | {"cellar"} if not mentions(text, n))
    assert not missing, "libcellar(3) does not name: %s" % missing
