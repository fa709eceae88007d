"""No tracked file names a package host: sources are named by registry reference (``debian:``,
``pypi:``, ``npm:``) or by their upstream project's own URL, and each machine's apt, pip and
npm configuration (or the workspace's ``[mirrors]``) says which host serves them, so this
repository moves to a network whose mirrors have other names with no edit.

A *package host* serves the files of many projects on a registry's behalf: a registry, its
file host or CDN, a distribution's archive or one of its mirrors. Naming one in a workspace, a
lock, a generated workflow, a default, a doc or a test ties that file to one network. Not
package hosts, and so allowed: an upstream project's own release location (a recipe's
``https://github.com/OWNER/REPO/releases/download/…`` or ``https://ffmpeg.org/releases/…`` is
the identity of the release it provides; a company redirects it with ``[mirrors]``), an
action's ``uses:`` line (``actions/checkout@<commit>``, no host), and a distribution's pages
that serve documentation, not packages (its wiki, bug tracker, mailing lists, package tracker,
git forge).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# host pattern -> what it is (each written so that it does not spell the host it matches)
PACKAGE_HOSTS = {
    # Debian's archive: deb., ftp., ftp.<country>., security., snapshot., httpredir., incoming.,
    # cdn-fastly.deb. … (every host of the domain but its documentation sites), and its CDN
    r"(?:[a-z0-9-]+\.)+debian\.(?:org|net)": "Debian's archive or one of its mirrors",
    r"debian\.map\.fastly\.net": "Debian's archive CDN",
    # Ubuntu's archive and PPAs (a runner's apt)
    r"(?:[a-z0-9-]+\.)*(?:archive|security|ports)\.ubuntu\.com": "Ubuntu's archive",
    r"ppa\.launchpad(?:content)?\.net": "Launchpad's package archives",
    # PyPI: the index, its old name, its file host, the test index
    r"(?:[a-z0-9-]+\.)*pypi\.(?:org|io)": "PyPI",
    r"pypi\.python\.org": "PyPI (its old name)",
    r"(?:[a-z0-9-]+\.)*python(?:hosted)\.org": "PyPI's file host",
    # npm: the registry and its site, and the registries that mirror it
    r"(?:[a-z0-9-]+\.)*npm(?:js)\.(?:org|com)": "the npm registry",
    r"registry\.yarnpkg\.com": "Yarn's mirror of the npm registry",
    r"registry\.npmmirror\.com": "a public mirror of the npm registry",
    r"npm\.pkg\.github\.com": "GitHub's npm registry",
    # GitHub's download hosts (where a release asset or archive is really served from; the
    # github.com URL of a project's release is that project's own name for it)
    r"(?:[a-z0-9-]+\.)*githubusercontent\.com": "GitHub's file CDN",
    r"codeload\.github\.com": "GitHub's archive host",
    # the other ecosystems' registries (none is used; named so none is started by a host)
    r"(?:conda\.anaconda\.org|repo\.anaconda\.com)": "Anaconda's channels",
    r"(?:static|index)\.crates\.io": "crates.io's file hosts",
    r"proxy\.golang\.org": "the Go module proxy",
    r"repo1?\.maven(?:\.apache)?\.org": "Maven Central",
}
# a distribution's documentation sites (pages, not packages)
DOCUMENTATION = {".".join((site, "debian", "org")) for site in
                 ("www", "wiki", "bugs", "lists", "tracker", "salsa")}
HOST = re.compile(r"(?<![A-Za-z0-9.-])(?:" + "|".join(f"(?:{p})" for p in PACKAGE_HOSTS)
                  + r")(?![A-Za-z0-9-])", re.IGNORECASE)


def package_hosts(text: str) -> list[tuple[int, str]]:
    """(line, host) of each package host ``text`` names."""
    out = []
    for m in HOST.finditer(text):
        if m[0].lower() not in DOCUMENTATION:
            out.append((text.count("\n", 0, m.start()) + 1, m[0]))
    return out


def test_no_tracked_file_names_a_package_host() -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    found = []
    for rel in filter(None, files):
        path = ROOT / rel
        if not path.is_file():
            continue  # deleted in the work tree, not yet in the index
        text = path.read_bytes().decode("latin-1")
        found += [f"{rel}:{line}: {host}" for line, host in package_hosts(text)]
    assert found == [], (
        "tracked files name package hosts; name the source by registry reference "
        "(debian:pool/…, pypi:NAME==VERSION#TAG, npm:NAME@VERSION) or its upstream URL, and "
        "let the machine's apt, pip and npm configuration (or [mirrors]) say where it comes "
        "from:\n" + "\n".join(found))


def test_the_check_sees_each_kind_of_host_and_passes_the_allowed_ones() -> None:
    """Held on the hosts written out at run time (this file may not spell them)."""
    dot = "."
    seen = [
        f"http://deb{dot}debian{dot}org/debian/pool/main/f/x.orig.tar.xz",
        f"deb http://ftp{dot}de{dot}debian{dot}org/debian bookworm main",
        f"https://files{dot}python" f"hosted{dot}org/packages/ab/x.whl",
        f"PIP_INDEX_URL=https://pypi{dot}org/simple",
        f"https://registry{dot}npm" f"js{dot}org/onnxruntime-web",
        f"https://objects{dot}githubusercontent{dot}com/release-assets/1",
        f"URIs: http://archive{dot}ubuntu{dot}com/ubuntu",
    ]
    for line in seen:
        assert len(package_hosts(line)) == 1, line
    allowed = [
        "https://github.com/microsoft/onnxruntime/releases/download/v1.21.0/x.tgz",
        "https://ffmpeg.org/releases/ffmpeg-7.1.5.tar.xz",
        "uses: actions/checkout@fbc6f3992d24b796d5a048ff273f7fcc4a7b6c09 # v5.1.0",
        f"https://wiki{dot}debian{dot}org/DebianRepository/Format",
        "debian:pool/main/f/ffmpeg/ffmpeg_7.1.5.orig.tar.xz",
        "pypi:onnxruntime==1.21.0#cp311-cp311-win_amd64 npm:onnxruntime-web@1.30.0",
        f"mydebian{dot}org.example and notpypi{dot}organic",
    ]
    for line in allowed:
        assert package_hosts(line) == [], line
