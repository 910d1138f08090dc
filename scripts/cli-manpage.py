#!/usr/bin/env python3
"""Writes the syncstore-cli(1) man page from the tool's own help.

The text comes from `syncstore-cli --experimental-dump-help` (swift-argument-parser's JSON of
every command, option and help text), so the man page says what `--help` says. The SwiftPM
`generate-manual` plugin does the same but needs the plugin machinery; this needs Python only.

usage: cli-manpage.py PATH/TO/syncstore-cli OUTPUT.1
"""
import datetime
import json
import os
import subprocess
import sys


def roff(text):
    """Text as roff: backslashes and leading dots/quotes escaped."""
    lines = []
    for line in text.replace("\\", "\\e").split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def paragraphs(text):
    """Prose paragraphs filled by man; indented lines (examples, JSON) kept as they are."""
    out = []
    for block in text.strip("\n").split("\n\n"):
        out.append(".PP")
        prose, pre = [], []
        for line in block.split("\n") + [""]:
            if line.startswith("  "):
                if prose:
                    out.append(roff(" ".join(prose)))
                    prose = []
                pre.append(line)
                continue
            if pre:
                out.extend([".nf", roff("\n".join(pre)), ".fi"])
                pre = []
            if line:
                prose.append(line)
        if prose:
            out.append(roff(" ".join(prose)))
    return "\n".join(out)


def option_line(arg):
    names = arg.get("names") or []
    spelled = ", ".join(("--" if n["kind"] == "long" else "-") + n["name"] for n in names)
    value = arg.get("valueName")
    if arg["kind"] == "positional":
        spelled = "<" + (value or "value") + ">"
    elif arg["kind"] == "option" and value:
        spelled += " <" + value + ">"
    if arg.get("isRepeating"):
        spelled += " ..."
    return spelled


def command_section(command, path, out):
    name = " ".join(path)
    if len(path) > 1:
        out.append(".SH " + roff(name.upper()) if len(path) == 2 else ".SS " + roff(name))
    if command.get("abstract"):
        out.append(".PP\n" + roff(command["abstract"]))
    if command.get("discussion"):
        out.append(paragraphs(command["discussion"]))
    args = [a for a in command.get("arguments") or [] if a.get("shouldDisplay", True)]
    if args:
        out.append(".PP\nOptions of \\fB" + roff(name) + "\\fR:")
        for arg in args:
            out.append(".TP\n\\fB" + roff(option_line(arg)) + "\\fR")
            text = arg.get("abstract") or ""
            if arg.get("defaultValue"):
                text += " (default: " + arg["defaultValue"] + ")"
            out.append(roff(text))
    for sub in command.get("subcommands") or []:
        if sub["commandName"] == "help":
            continue
        command_section(sub, path + [sub["commandName"]], out)


def main():
    tool, output = sys.argv[1], sys.argv[2]
    dump = json.loads(subprocess.run([tool, "--experimental-dump-help"], check=True,
                                     capture_output=True, text=True).stdout)
    root = dump["command"]
    version = subprocess.run([tool, "--version"], check=True, capture_output=True, text=True).stdout.strip()
    # SOURCE_DATE_EPOCH: reproducible builds get the same page.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
            else datetime.datetime.now(datetime.timezone.utc))
    date = when.strftime("%Y-%m-%d")
    out = [f'.TH SYNCSTORE-CLI 1 "{date}" "SyncStore {roff(version)}" "User Commands"',
           ".SH NAME", "syncstore-cli \\- " + roff(root.get("abstract", "")),
           ".SH SYNOPSIS", "\\fBsyncstore-cli\\fR \\fIcommand\\fR [\\fIoptions\\fR]",
           ".SH DESCRIPTION"]
    subs = [s["commandName"] for s in root.get("subcommands") or [] if s["commandName"] != "help"]
    out.append(".PP\nCommands: " + ", ".join("\\fB" + s + "\\fR" for s in subs) + ". Each is described below; "
               "\\fBsyncstore-cli \\fIcommand\\fB --help\\fR prints the same text.")
    command_section(root, ["syncstore-cli"], out)
    out += [".SH SEE ALSO", "The SyncStore README (the command line section)."]
    with open(output, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
