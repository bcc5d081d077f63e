#!/usr/bin/env python3
"""make refusals: writes what is made from refusals.tsv, the one table of refusals.

- Sources/DiaryCore/Errors/Refusal.swift: the server's enum, its SQLSTATEs, statuses and titles;
- Clients/DiaryKit/Sources/DiaryKit/ProblemCode.swift: DiaryKit's open enum, with the messages;
- openapi.yaml: the codes of `Problem.code`;
- docs/refusals.md: the table as a client's developer reads it.

With --check it writes nothing, names each file that is not what it would write, and exits 1
if any is not (RefusalTableTests runs it so).
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "refusals.tsv"
HEADER = "// Made by `make refusals` (scripts/refusals.py) from refusals.tsv: change the table, not this file.\n"


def load():
    rows = []
    lines = [line for line in TABLE.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    columns = lines[0].split("\t")
    for line in lines[1:]:
        values = line.split("\t")
        if len(values) != len(columns):
            sys.exit(f"refusals.tsv: {values[0]} has {len(values)} columns, not {len(columns)}")
        row = dict(zip(columns, values))
        row["sqlstates"] = row["sqlstate"].split()
        if row["client"] not in ("", "transient", "refuses-draft"):
            sys.exit(f"refusals.tsv: {row['code']}: client is transient, refuses-draft or empty")
        rows.append(row)
    codes = [row["code"] for row in rows]
    if len(set(codes)) != len(codes):
        sys.exit("refusals.tsv: a code is listed twice")
    states = [state for row in rows for state in row["sqlstates"]]
    if len(set(states)) != len(states):
        sys.exit("refusals.tsv: a SQLSTATE is listed twice")
    return rows


def case_name(code):
    words = code.split("_")
    name = words[0] + "".join("ID" if word == "id" else "URL" if word == "url" and i > 0 else word.capitalize() for i, word in enumerate(words[1:], 1))
    return name


def declared(code):
    name = case_name(code)
    return f"`{name}`" if name in ("internal", "default", "case") else name


def swift_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def server_enum(rows):
    out = [HEADER, "\n",
           "/// Every refusal a client may meet: its code, the HTTP status it answers with, its title, and\n",
           "/// the SQLSTATE our SQL raises it with, if it does. A new refusal is one `raise` in SQL and one\n",
           "/// row of refusals.tsv.\n",
           "package enum Refusal: String, CaseIterable, Sendable {\n"]
    for row in rows:
        out.append(f"    /// {row['meaning']}\n")
        code = row["code"]
        name = declared(code)
        out.append(f"    case {name}" + ("" if case_name(code) == code else f" = {swift_string(code)}") + "\n")
    out.append("\n    /// The HTTP status it answers with.\n    package var status: Int {\n        switch self {\n")
    for row in rows:
        out.append(f"        case .{declared(row['code'])}: {row['status']}\n")
    out.append("        }\n    }\n\n    /// The problem's `title`: a short summary of the kind of problem.\n    package var title: String {\n        switch self {\n")
    for row in rows:
        out.append(f"        case .{declared(row['code'])}: {swift_string(row['title'])}\n")
    out.append("        }\n    }\n\n    /// The refusal our SQL raises with `sqlState` (class ZN); nil for any other.\n")
    out.append("    package init?(sqlState: String) {\n        switch sqlState {\n")
    for row in rows:
        if row["sqlstates"]:
            states = ", ".join(swift_string(state) for state in row["sqlstates"])
            out.append(f"        case {states}: self = .{declared(row['code'])}\n")
    out.append("        default: return nil\n        }\n    }\n\n")
    out.append("    /// Every SQLSTATE our SQL raises.\n    package static let sqlStates: [String] = [" +
               ", ".join(swift_string(state) for row in rows for state in row["sqlstates"]) + "]\n}\n")
    return "".join(out)


def diarykit_enum(rows):
    out = [HEADER, "\n",
           "/// A problem's stable `code`, as the contract lists them (`Problem.code`), open: a code the\n",
           "/// server adds later arrives as `.unknown` instead of failing to decode.\n",
           "public enum ProblemCode: Sendable, Hashable, CustomStringConvertible {\n"]
    for row in rows:
        out.append(f"    /// {row['meaning']}\n    case {declared(row['code'])}\n")
    out.append("    /// A code this version of DiaryKit does not know.\n    case unknown(String)\n\n")
    out.append("    static let known: [String: ProblemCode] = [\n")
    for row in rows:
        out.append(f"        {swift_string(row['code'])}: .{declared(row['code'])},\n")
    out.append("    ]\n\n")
    out.append("""    /// The code for the text the server sent.
    public init(rawValue: String) {
        self = Self.known[rawValue] ?? .unknown(rawValue)
    }

    /// The text the server sends.
    public var rawValue: String {
        if case .unknown(let text) = self { return text }
        return Self.known.first { $0.value == self }!.key
    }

    /// The code as the server writes it.
    public var description: String { rawValue }

""")
    refusing = [row for row in rows if row["client"] == "refuses-draft"]
    transient = [row for row in rows if row["client"] == "transient"]
    out.append("    /// A verdict on what was sent, which no retry changes: the offline queue drops a draft\n")
    out.append("    /// refused so, and keeps it for any other answer. A closed list: a code the server adds\n")
    out.append("    /// later keeps the draft.\n    public var refusesTheDraft: Bool {\n        switch self {\n")
    out.append("        case " + ", ".join("." + declared(row["code"]) for row in refusing) + ": true\n")
    out.append("        default: false\n        }\n    }\n\n")
    out.append("    /// Whether the same request may succeed later without any change: the server was busy,\n")
    out.append("    /// slow or under maintenance, or the caller was rate limited.\n    public var isTransient: Bool {\n        switch self {\n")
    out.append("        case " + ", ".join("." + declared(row["code"]) for row in transient) + ": true\n")
    out.append("        default: false\n        }\n    }\n\n")
    out.append("    /// What an app may show for it, in Japanese and in English; nil for a code this version\n")
    out.append("    /// of DiaryKit does not know.\n    public var message: (japanese: String, english: String)? {\n        switch self {\n")
    for row in rows:
        out.append(f"        case .{declared(row['code'])}: ({swift_string(row['ja'])}, {swift_string(row['en'])})\n")
    out.append("        case .unknown: nil\n        }\n    }\n}\n")
    return "".join(out)


def openapi(rows, text):
    pattern = re.compile(r"(    Problem:\n(?:.*\n)*?        code:\n(?:.*\n)*?\s*enum: \[)([^\]]*)(\])")
    match = pattern.search(text)
    if not match:
        sys.exit("openapi.yaml: Problem.code has no enum")
    lines, line = [], ""
    for code in (row["code"] for row in rows):
        piece = code if not line else line + ", " + code
        if len(piece) > 100:
            lines.append(line + ",")
            line = code
        else:
            line = piece
    lines.append(line)
    listed = ("\n" + " " * 21).join(lines)
    return text[:match.start(2)] + listed + text[match.end(2):]


def document(rows):
    out = ["# Refusals\n\n",
           "<!-- Made by `make refusals` (scripts/refusals.py) from refusals.tsv: change the table, not this file. -->\n\n",
           "Every error is `application/problem+json` (RFC 9457) with a stable `code`, one of these. `title`\n",
           "is the row's title; `detail` says what happened this time. DiaryKit's `ProblemCode` knows each\n",
           "code, whether a retry may succeed (`isTransient`) or the offline queue drops the draft\n",
           "(`refusesTheDraft`), and the message an app may show (`message`).\n\n",
           "| code | status | meaning | app message (ja / en) |\n|---|---|---|---|\n"]
    for row in rows:
        out.append(f"| `{row['code']}` | {row['status']} | {row['meaning']} | {row['ja']} / {row['en']} |\n")
    return "".join(out)


def main():
    check = "--check" in sys.argv[1:]
    rows = load()
    outputs = {
        ROOT / "Sources/DiaryCore/Errors/Refusal.swift": server_enum(rows),
        ROOT / "Clients/DiaryKit/Sources/DiaryKit/ProblemCode.swift": diarykit_enum(rows),
        ROOT / "openapi.yaml": openapi(rows, (ROOT / "openapi.yaml").read_text(encoding="utf-8")),
        ROOT / "docs/refusals.md": document(rows),
    }
    stale = []
    for path, text in outputs.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(str(path.relative_to(ROOT)))
        if not check:
            path.write_text(text, encoding="utf-8")
    if check and stale:
        print("refusals: not as refusals.tsv makes them (run make refusals): " + ", ".join(stale), file=sys.stderr)
        sys.exit(1)
    if not check:
        print("refusals: " + (", ".join(stale) if stale else "nothing") + " written")


if __name__ == "__main__":
    main()
