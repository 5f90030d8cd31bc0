#!/usr/bin/env python3
"""braid_errors.py - read valgrind memcheck XML files (one per rank) and
report the errors whose stack has a braid frame. Exit status 1 when there is
any, 2 when a file cannot be parsed; prints a one-line summary otherwise."""
import sys
import xml.etree.ElementTree as ET


def is_braid(frame):
    obj = frame.findtext("obj") or ""
    fn = frame.findtext("fn") or ""
    return ("mca_coll_braid" in obj or fn.startswith("braid_")
            or fn.startswith("mca_coll_braid"))


def main(paths):
    total = braid = 0
    out = []
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError) as e:
            print(f"cannot parse {path}: {e}")
            return 2
        for err in root.iter("error"):
            total += 1
            frames = [f for st in err.findall("stack") for f in st.findall("frame")]
            if not any(is_braid(f) for f in frames):
                continue
            braid += 1
            kind = err.findtext("kind")
            what = err.findtext("what") or err.findtext("xwhat/text") or ""
            out.append(f"{path}: {kind}: {what}")
            for f in frames[:12]:
                out.append("    %s %s:%s (%s)" % (f.findtext("fn") or "?", f.findtext("file") or "",
                                                f.findtext("line") or "", f.findtext("obj") or ""))
    if braid:
        print("\n".join(out))
        return 1
    print(f"{total} errors outside braid (Open MPI/UCX noise), none with a braid frame")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
