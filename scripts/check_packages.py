#!/usr/bin/python3
"""Proves that scripts/packages.txt is complete: every system file the build and the tests
used belongs to a listed Debian package or to one those pull in through Depends or
Pre-Depends (never Recommends, which setup.sh's --no-install-recommends leaves out).

Files checked: headers (ninja -t deps), libraries and runtime archives on the link lines
(each link command rerun with -### to see the real ld invocation), the shared objects the
built binaries load (ldd), the programs the tests and the build commands run, and the
Python modules the Python tests import. Files in the source tree and the build dir are
skipped. Standard library only; run through scripts/check_packages.sh.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MERGED_USR = ("/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/")
LIBRARY_FILE = re.compile(r"\.(a|o|so(\.[0-9]+)*)$")
SHOWN_PER_PACKAGE = 8


class Files:
    """System files used, each with the check that found it and what needed it."""

    def __init__(self, root, build):
        self.skip = (root.rstrip("/") + "/", build.rstrip("/") + "/")
        self.found = {}  # path -> (check, needed_by)

    def add(self, path, check, needed_by):
        if not path.startswith("("):  # "(-lfoo not found)" and the like stay as they are
            path = os.path.abspath(path)
        if not path.startswith(self.skip) and path not in self.found:
            self.found[path] = (check, needed_by)


def run(command, cwd=None):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"check_packages: {' '.join(command)} failed:\n{done.stderr}")
    return done.stdout


# ---- Debian's package database

def installed_packages():
    """name -> {"depends": [[alternative, ...], ...], "provides": [...]} from dpkg's status."""
    packages = {}
    with open("/var/lib/dpkg/status", encoding="utf-8") as status:
        for paragraph in status.read().split("\n\n"):
            fields = dict(re.findall(r"^([A-Za-z-]+): ?(.*)$", paragraph, re.M))
            if not fields.get("Status", "").endswith(" installed"):
                continue
            entry = packages.setdefault(fields["Package"], {"depends": [], "provides": []})
            for key in ("Pre-Depends", "Depends"):
                entry["depends"] += [[bare_name(a) for a in group.split("|")]
                                     for group in fields.get(key, "").split(",") if group.strip()]
            entry["provides"] += [bare_name(p) for p in fields.get("Provides", "").split(",") if p.strip()]
    return packages


def bare_name(relation):
    """`libc6:any (>= 2.34)` -> `libc6`: version constraints and arch qualifiers ignored."""
    return re.sub(r"\(.*?\)|\[.*?\]", "", relation).strip().split(":")[0]


def closure(roots, packages):
    """The installed packages reached from roots through Depends and Pre-Depends, with
    the package that pulled each one in. Alternatives and virtual names resolve to the
    installed packages that satisfy them."""
    providers = defaultdict(list)
    for name, entry in packages.items():
        for virtual in entry["provides"]:
            providers[virtual].append(name)
    pulled_by = {root: None for root in roots if root in packages}
    stack = list(pulled_by)
    while stack:
        name = stack.pop()
        for group in packages[name]["depends"]:
            for alternative in group:
                targets = [alternative] if alternative in packages else providers.get(alternative, [])
                for target in targets:
                    if target not in pulled_by:
                        pulled_by[target] = name
                        stack.append(target)
    return pulled_by


def file_owners():
    """path -> owning package names, from every /var/lib/dpkg/info/*.list."""
    owners = defaultdict(list)
    for listing in glob.glob("/var/lib/dpkg/info/*.list"):
        package = os.path.basename(listing)[:-len(".list")].split(":")[0]
        with open(listing, encoding="utf-8", errors="surrogateescape") as paths:
            for path in paths.read().splitlines():
                owners[path].append(package)
    return owners


def candidates(path):
    """The names dpkg may list a file under: as seen, its merged-/usr twin, its realpath."""
    names = []
    for name in (path, os.path.realpath(path)):
        names.append(name)
        if name.startswith("/usr/") and name[4:].startswith(MERGED_USR):
            names.append(name[4:])
        elif name.startswith(MERGED_USR):
            names.append("/usr" + name)
    return names


def owner_of(path, owners):
    for name in candidates(path):
        if name in owners:
            return owners[name]
    return []


# ---- files the build used

# The compile-only check of the CUDA lane sources (ctest cuda_lane_compiles) uses a CUDA
# toolkit where the machine has one; it is no package of ours and the check is skipped
# where it is missing, so its headers are not held against the list.
OPTIONAL_TOOLKIT_TARGETS = ("/specd_cuda_lane_check.dir/",)


def header_files(build, files):
    target = None
    for line in run(["ninja", "-C", build, "-t", "deps"]).splitlines():
        if line and not line[0].isspace():
            target = line.split(":")[0]
        elif line.strip() and not any(t in target for t in OPTIONAL_TOOLKIT_TARGETS):
            files.add(os.path.join(build, line.strip()), "header", target)


def build_commands(build):
    """Every command of the default targets, as argument lists split at `&&`."""
    commands = []
    for line in run(["ninja", "-C", build, "-t", "commands"]).splitlines():
        part = []
        for word in shlex.split(line) + ["&&"]:
            if word in ("&&", ";"):
                if part and part[0] not in (":", "cd"):
                    commands.append(part)
                part = []
            else:
                part.append(word)
    return commands


def is_link(command):
    """A compiler driver's link step (not a compile, not ar)."""
    return "-o" in command and "-c" not in command and re.search(r"clang|\+\+", os.path.basename(command[0]))


def output_of(command):
    return command[command.index("-o") + 1]


def linker_invocation(build, command):
    """The ld command line clang runs for this link (-### prints it without linking)."""
    done = subprocess.run(command + ["-###"], cwd=build, capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.startswith(' "')]
    if done.returncode != 0 or not lines:
        sys.exit(f"check_packages: {command[0]} -### gave no linker line:\n{done.stderr}")
    return shlex.split(lines[-1])


def default_search_dirs(linker):
    script = run([linker, "--verbose"])
    return [d.lstrip("=") for d in re.findall(r'SEARCH_DIR\("([^"]+)"\)', script)]


def resolve_library(name, dirs, static):
    """Where ld finds -l<name>: per directory, the .so before the .a unless static."""
    if name.startswith(":"):
        choices = [name[1:]]
    else:
        choices = ([] if static else [f"lib{name}.so"]) + [f"lib{name}.a"]
    for directory in dirs:
        for choice in choices:
            path = os.path.join(directory, choice)
            if os.path.exists(path):
                return path
    return None


def linked_files(build, ld_args, default_dirs):
    """Absolute object, archive and library paths ld reads, -l names resolved."""
    dirs, libraries, paths, static = [], [], [], False
    args = iter(ld_args[1:])
    for arg in args:
        if arg in ("-L", "-l"):
            arg += next(args, "")
        if arg.startswith("-L"):
            dirs.append(os.path.join(build, arg[2:]))
        elif arg.startswith("-l"):
            libraries.append((arg[2:], static))
        elif arg in ("-Bstatic", "-static", "-dn", "-non_shared"):
            static = True
        elif arg in ("-Bdynamic", "-dy", "-call_shared"):
            static = False
        elif not arg.startswith("-") and LIBRARY_FILE.search(arg):
            paths.append(os.path.join(build, arg))
        elif arg.startswith("-") and "=/" in arg and os.path.isfile(arg.split("=", 1)[1]):
            paths.append(arg.split("=", 1)[1])  # e.g. --dynamic-list=libclang_rt.asan-x86_64.a.syms
    for name, is_static in libraries:
        found = resolve_library(name, dirs + default_dirs, is_static)
        paths.append(found or f"(-l{name} not found)")
    return paths + [p for path in paths for p in linker_script_inputs(path)]


def linker_script_inputs(path):
    """Files a GNU ld script (e.g. libc.so) names in GROUP/INPUT."""
    if not path.endswith(".so") or not os.path.isfile(path) or os.path.getsize(path) > 4096:
        return []
    with open(path, "rb") as library:
        text = library.read()
    if text.startswith(b"\x7fELF"):
        return []
    return re.findall(r"(/[^\s()]+)", re.sub(r"/\*.*?\*/", "", text.decode(errors="replace"), flags=re.S))


def link_and_build_files(build, files):
    commands = build_commands(build)
    for command in commands:
        for word in command[:2]:  # the program, and the compiler after ccache
            if os.path.isabs(word) and os.access(word, os.X_OK):
                files.add(word, "build", output_of(command) if "-o" in command else " ".join(command[:3]))
    links = [c for c in commands if is_link(c)]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        invocations = list(pool.map(lambda c: linker_invocation(build, c), links))
    default_dirs = default_search_dirs(invocations[0][0]) if invocations else []
    for command, ld_args in zip(links, invocations):
        files.add(ld_args[0], "build", output_of(command))
        for path in linked_files(build, ld_args, default_dirs):
            files.add(path, "link", output_of(command))


def built_binaries(build):
    for directory, subdirs, names in os.walk(build):
        subdirs[:] = [d for d in subdirs if d != "CMakeFiles"]
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and (os.access(path, os.X_OK) or ".so" in name) and is_elf(path):
                yield path


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def loaded_files(build, binaries, files):
    """What ldd says each binary loads (named relative to the build dir when in it)."""
    def ldd(path):
        done = subprocess.run(["ldd", path], capture_output=True, text=True)
        return path, done.stdout
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for binary, output in pool.map(ldd, binaries):
            for line in output.splitlines():
                match = re.match(r"\s*(\S+)(?: => (\S+))?", line)
                if not match or match.group(2) is None and not match.group(1).startswith("/"):
                    continue  # linux-vdso and statically linked
                loaded = match.group(2) or match.group(1)
                if loaded == "not":
                    loaded = f"({match.group(1)} not found)"
                files.add(loaded, "ldd", os.path.relpath(binary, build) if binary.startswith(build + "/") else binary)


# ---- programs the tests run

def test_commands(build):
    listing = json.loads(run(["ctest", "--test-dir", build, "--show-only=json-v1"]))
    return [(test["name"], test["command"]) for test in listing["tests"] if test.get("command")]


def programs_of(command):
    """The program of a test command and of the command after a wrapper's `--`."""
    programs = [command[0]]
    if "--" in command[1:]:
        programs.append(command[command.index("--", 1) + 1])
    return [p if os.path.isabs(p) else shutil.which(p) or f"({p} not on PATH)" for p in programs]


def script_programs(script, seen):
    """Absolute program paths written in a test script and in the modules it imports
    by relative path (tests/web/chromium.mjs launches /usr/bin/chromium)."""
    if script in seen or not os.path.isfile(script):
        return []
    seen.add(script)
    with open(script, encoding="utf-8", errors="replace") as f:
        text = f.read()
    found = re.findall(r"""['"]((?:/usr)?/s?bin/[\w.+-]+)['"]""", text)
    for module in re.findall(r"""from\s+['"](\.{1,2}/[^'"]+)['"]""", text):
        found += script_programs(os.path.normpath(os.path.join(os.path.dirname(script), module)), seen)
    return found


PYTHON_MODULE_FILES = """
import modulefinder, sys
finder = modulefinder.ModuleFinder()
finder.run_script(sys.argv[1])
for module in finder.modules.values():
    if module.__file__:
        print(module.__file__)
"""


def python_module_files(python, script):
    return run([python, "-c", PYTHON_MODULE_FILES, script]).splitlines()


def test_files(build, files):
    seen = set()
    for name, command in test_commands(build):
        programs = programs_of(command)
        for program in programs:
            files.add(program, "program", name)
        scripts = [arg for arg in command if arg.startswith(ROOT + "/") and os.path.isfile(arg)]
        for script in scripts:
            for program in script_programs(script, seen):
                files.add(program, "program", f"{name} ({os.path.relpath(script, ROOT)})")
            if script.endswith(".py") and "python" in os.path.basename(programs[0]):
                for module in python_module_files(programs[0], script):
                    files.add(module, "program", f"{name} (python import)")


# ---- the verdict

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"), help="build dir (default build/)")
    parser.add_argument("--packages", default=os.path.join(ROOT, "scripts", "packages.txt"),
                        help="the package list to prove (default scripts/packages.txt)")
    args = parser.parse_args()
    build = os.path.realpath(args.build)
    started = time.monotonic()
    with open(args.packages, encoding="utf-8") as f:
        listed = [w for line in f for w in line.split("#")[0].split()]
    packages = installed_packages()
    accepted = closure(listed, packages)
    owners = file_owners()
    files = Files(ROOT, build)
    header_files(build, files)
    link_and_build_files(build, files)
    test_files(build, files)
    # The built binaries, and the ELF programs and Python extension modules the tests ran.
    ran = [p for p, (check, _) in files.found.items() if check == "program" and os.path.isfile(p) and is_elf(p)]
    loaded_files(build, list(built_binaries(build)) + ran, files)
    return verdict(files, owners, listed, packages, accepted, args.packages, time.monotonic() - started)


def shown(path):
    return os.path.relpath(path) if os.path.abspath(path).startswith(ROOT + "/") else path


def verdict(files, owners, listed, packages, accepted, list_file, seconds):
    missing = defaultdict(list)  # package (or a reason) -> [(path, check, needed_by)]
    used = set()
    for path, (check, needed_by) in sorted(files.found.items()):
        names = owner_of(path, owners) if os.path.exists(path) else []
        if any(n in accepted for n in names):
            used.update(n for n in names if n in accepted)
            continue
        reason = ("(owned by no package)" if os.path.exists(path) else "(no such file)")
        missing[names[0] if names else reason].append((path, check, needed_by))
    for name in listed:
        if name not in packages:
            missing[f"{name} (listed but not installed: run scripts/setup.sh)"] = []
    if not missing:
        counts = defaultdict(int)
        for check, _ in files.found.values():
            counts[check] += 1
        detail = ", ".join(f"{n} {c}" for c, n in sorted(counts.items()))
        print(f"check_packages: ok: {len(files.found)} system files ({detail}) from {len(used)} packages, "
              f"all from the {len(listed)} in {shown(list_file)} or their Depends/Pre-Depends "
              f"({len(accepted)} packages) [{seconds:.1f} s]")
        return 0
    print(f"check_packages: FAIL: files the build and the tests used come from packages that "
          f"{shown(list_file)} neither lists nor pulls in through Depends/Pre-Depends:")
    for name, uses in sorted(missing.items()):
        print(f"  {name}")
        for path, check, needed_by in uses[:SHOWN_PER_PACKAGE]:
            print(f"    {check:8} {path}  (needed by {needed_by})")
        if len(uses) > SHOWN_PER_PACKAGE:
            print(f"    ... and {len(uses) - SHOWN_PER_PACKAGE} more")
    return 1


if __name__ == "__main__":
    sys.exit(main())
