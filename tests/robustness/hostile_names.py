"""A corpus of hostile names: every shell and Python metacharacter, newlines, NUL, quotes, format
strings, option-looking words, path tricks and unicode, most carrying a payload that would create a
marker file if any generated script ever ran it as code."""

from __future__ import annotations

META = [";", "|", "&", "&&", "||", "$", "$(", ")", "`", "<", ">", ">>", "*", "?", "[", "]", "{", "}", "~", "!",
        "#", "'", '"', "\\", " ", "\t", "\n", "\r", "\r\n", "\x00", '"""', "'''", "%s", "{0}", "{}", "%(x)s",
        "\\n", "\x1b[31m", "\u202e", "\u200b", "\U0001f600", "\u540d\u524d", "\u00e9", "\u00df", "\ufeff", "..",
        "/", "-", "--", "=", ",", ":", "@", "\x7f", "\x0b", "\x0c", "^", "\u2028"]


def payloads(marker: str) -> list[str]:
    """Ways out of a shell word, a comment, a Python string or a docstring, each touching `marker`."""
    return [
        f"$(touch {marker})",
        f"`touch {marker}`",
        f"; touch {marker};",
        f"\ntouch {marker}\n",
        f"' ; touch {marker} ; '",
        f'" ; touch {marker} ; "',
        f'"""\nimport os; os.system("touch {marker}")\n"""',
        f"'''\nimport os; os.system('touch {marker}')\n'''",
        f'\\"; touch {marker}; #',
        f"{{__import__('os').system('touch {marker}')}}",
        f'")\nimport os\nos.system("touch {marker}")\n#',
        f"\n# -*- coding: x -*-\nimport os\nos.system('touch {marker}')",
        f"\\\nimport os; os.system('touch {marker}')",
        f"$'\\n'touch {marker}",
        f"${{IFS}}touch${{IFS}}{marker}",
    ]


EXTRA = ["--help", "-rf", "--onnx=/etc/passwd", "../../../etc/passwd", "..", ".", "~", "~root", "/tmp", "engine_0_gpu.onnx",
         "engine_1_cpu.onnx", "manifest.json", "build.sh", "convert.py", "\x00\x00", "a\x00b", "CON", "NUL.txt",
         " ", "", "\u202egnp.exe", "\U0001f4a3" * 20, "x" * 300]


def hostile_names(marker: str) -> list[str]:
    out: list[str] = []
    shells = payloads(marker)
    for i, meta in enumerate(META):
        for j in range(4):
            out.append(f"n{i}_{j}{meta}{shells[(i + j) % len(shells)]}{meta}")
    out += shells + EXTRA
    return list(dict.fromkeys(out))


def file_stem(name: str) -> str:
    """A name the OS can hold as a file name: no '/', no NUL, at most 200 bytes, not empty."""
    stem = name.replace("/", "\u2215").replace("\x00", "^@")
    while len(stem.encode("utf-8")) > 200:
        stem = stem[:-1]
    return stem if stem not in ("", ".", "..") else f"dots{stem}"
