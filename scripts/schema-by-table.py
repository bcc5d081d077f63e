"""Regroups a schema-only pg_dump by table, for reading (scripts/schema.sh).

pg_dump sorts by object type: a table at one line, its indexes hundreds of lines later, its
triggers and policies later still. This prints, after pg_dump's preamble and extensions, each
table with everything that belongs to it: the table, its sequences, keys and checks, foreign
keys, indexes, row security, policies, triggers, grants and comments. Then the views, then
the functions, each with its grants and comment. Within a group pg_dump's order stays.

Reads the dump on stdin and writes the regrouped text on stdout.
"""
import re
import sys

HEADER = re.compile(r"^-- Name: (?P<name>.*?); Type: (?P<type>[A-Z ]+); Schema: (?P<schema>[^;]*); Owner: .*$")

text = sys.stdin.read()
lines = text.split("\n")

# Blocks start at the "--" line before a "-- Name:" header.
starts = [i - 1 for i, line in enumerate(lines) if HEADER.match(line) and i > 0 and lines[i - 1] == "--"]
preamble = "\n".join(lines[: starts[0]]) if starts else text
blocks = []
for index, start in enumerate(starts):
    end = starts[index + 1] if index + 1 < len(starts) else len(lines)
    header = HEADER.match(lines[start + 1])
    blocks.append((header.group("type"), header.group("name"), "\n".join(lines[start:end]).rstrip("\n")))

ORDER = ["TABLE", "SEQUENCE", "DEFAULT", "SEQUENCE OWNED BY", "CONSTRAINT", "FK CONSTRAINT", "INDEX",
         "ROW SECURITY", "POLICY", "TRIGGER", "ACL", "COMMENT"]


def table_of(kind, name, body):
    """The table a block belongs to, or None."""
    if kind in ("TABLE", "ROW SECURITY"):
        return name
    if kind in ("CONSTRAINT", "FK CONSTRAINT", "TRIGGER", "POLICY", "DEFAULT"):
        return name.split(" ")[0]
    if kind == "INDEX":
        found = re.search(r" ON (?:ONLY )?public\.(\w+)", body)
        return found.group(1) if found else None
    if kind in ("SEQUENCE", "SEQUENCE OWNED BY"):
        found = re.search(r"(?:ALTER TABLE (?:ONLY )?public\.(\w+)|OWNED BY public\.(\w+))", body)
        return (found.group(1) or found.group(2)) if found else None
    if kind in ("ACL", "COMMENT"):
        found = re.match(r"(?:TABLE|COLUMN) (\w+)", name)
        return found.group(1) if found else None
    return None


tables = {}
table_order = []
views, functions, other = [], [], []
function_extras = {}
for kind, name, body in blocks:
    table = table_of(kind, name, body)
    if table is not None and (kind != "ACL" or name.startswith("TABLE ")) and kind != "VIEW":
        if table not in tables:
            tables[table] = []
            table_order.append(table)
        tables[table].append((kind, body))
    elif kind == "VIEW":
        views.append((name, [body]))
    elif kind == "FUNCTION":
        functions.append((name, [body]))
    elif kind in ("ACL", "COMMENT") and name.startswith("FUNCTION "):
        function_extras.setdefault(name[len("FUNCTION "):], []).append(body)
    else:
        other.append(body)

# A view's grants are "TABLE <view>" ACLs: move them from the tables to their view.
for index, (name, parts) in enumerate(views):
    if name in tables:
        parts.extend(body for _, body in tables.pop(name))
        table_order.remove(name)

out = [preamble.rstrip("\n")]
out.extend(other)
for table in table_order:
    rank = {kind: position for position, kind in enumerate(ORDER)}
    parts = sorted(tables[table], key=lambda part: rank.get(part[0], len(ORDER)))
    out.append("--\n-- ============================== " + table + " ==============================\n--")
    out.extend(body for _, body in parts)
for name, parts in views:
    out.append("--\n-- ============================== " + name + " (view) ==============================\n--")
    out.extend(parts)
out.append("--\n-- ============================== functions ==============================\n--")
for name, parts in functions:
    out.extend(parts)
    out.extend(function_extras.pop(name, []))
for leftover in function_extras.values():
    out.extend(leftover)
sys.stdout.write("\n\n".join(out).rstrip("\n") + "\n")
