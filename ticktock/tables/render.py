"""Render a ``Table`` as Markdown, CSV, LaTeX (booktabs) or an HTML fragment, and write the files.

CSV keeps the raw numbers (full precision); the other formats print them with the table's formats.
Notes follow the table; failures come first, loudly.

Example::

    >>> import pandas as pd
    >>> from ticktock.tables.common import Table
    >>> t = Table("t2", "Speedup", pd.DataFrame({"decoder": ["sl"], "speedup": [4.0]}), {"speedup": ".2f"})
    >>> print(markdown(t))
    ### Speedup
    <BLANKLINE>
    | decoder | speedup |
    |---|---:|
    | sl | 4.00 |
    >>> print(latex(t).splitlines()[3])
    \\toprule
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from ticktock.tables.common import Table

FORMATS = ("md", "csv", "tex", "html")


def _numeric(frame: pd.DataFrame, column) -> bool:
    values = frame[column].dropna()
    return len(values) > 0 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


MARKDOWN_SPECIAL = str.maketrans({"\\": "\\\\", "|": "\\|", "<": "\\<", ">": "\\>"})


def md_text(text) -> str:
    r"""``text`` as inert Markdown on one line: backslash, ``|`` (a table's cell border), ``<`` and ``>`` (raw HTML)
    backslash-escaped, every line break flattened to a space. Labels come from outside (a live server names its model
    and decoder), so every text a Markdown table shows goes through here.

    >>> print(md_text("<b>x</b>|y" + chr(10) + "z" + chr(92)))
    \<b\>x\</b\>\|y z\\
    """
    return " ".join(str(text).splitlines()).translate(MARKDOWN_SPECIAL)


def markdown(table: Table, provenance: bool = True) -> str:
    """A Markdown section: heading, failures, pipe table (numbers right-aligned), notes, provenance; every text
    escaped (``md_text``)."""
    lines = [f"### {md_text(table.title)}", ""]
    lines += [f"**{md_text(f)}**" for f in table.failures] + ([""] if table.failures else [])
    if len(table.frame):
        text = table.formatted()
        align = ["---:" if _numeric(table.frame, c) else "---" for c in text.columns]
        lines.append("| " + " | ".join(md_text(c) for c in text.columns) + " |")
        lines.append("|" + "|".join(align) + "|")
        lines += ["| " + " | ".join(md_text(v) for v in row) + " |" for row in text.itertuples(index=False)]
    else:
        lines.append("(no rows)")
    if table.notes:
        lines += [""] + [f"- {md_text(n)}" for n in table.notes if n]
    if provenance and table.provenance:
        lines += ["", "Produced by:"] + [f"- {md_text(p)}" for p in table.provenance]
    return "\n".join(lines)


def csv(table: Table) -> str:
    """The raw frame as CSV (numbers at full precision, missing values empty)."""
    return table.frame.to_csv(index=False)


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                 "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                 "–": "--", "≠": r"$\neq$", ">": r"\textgreater{}", "<": r"\textless{}"}


def latex_escape(text) -> str:
    r"""Escape LaTeX's special characters, on one line (a blank line inside a tabular would end its paragraph).

    >>> latex_escape("#MAT_1 & 50%")
    '\\#MAT\\_1 \\& 50\\%'
    """
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in " ".join(str(text).splitlines()))


def latex(table: Table) -> str:
    """A booktabs ``table`` environment (needs ``\\usepackage{booktabs}``); notes as a footnote block."""
    text = table.formatted()
    spec = "".join("r" if _numeric(table.frame, c) else "l" for c in text.columns) or "l"
    lines = [r"\begin{table}[t]", r"\centering", rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    if len(text.columns):
        lines.append(" & ".join(latex_escape(c) for c in text.columns) + r" \\")
        lines.append(r"\midrule")
        lines += [" & ".join(latex_escape(v) for v in row) + r" \\" for row in text.itertuples(index=False)]
    if not len(text):
        lines.append(r"\multicolumn{1}{l}{(no rows)} \\")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{latex_escape(table.title)}}}",
              rf"\label{{tab:{table.key}}}"]
    notes = [*table.failures, *[n for n in table.notes if n], *table.provenance]
    if notes:
        lines += [r"\par\footnotesize"] + [latex_escape(n) + r"\par" for n in notes]
    lines.append(r"\end{table}")
    return "\n".join(lines)


def html_fragment(table: Table) -> str:
    """A <section> with the table, its failures (class 'failure') and notes, everything escaped."""
    parts = [f'<section id="{html.escape(table.key)}">', f"<h2>{html.escape(table.title)}</h2>"]
    parts += [f'<p class="failure">{html.escape(f)}</p>' for f in table.failures]
    if len(table.frame):
        text = table.formatted()
        numeric = [_numeric(table.frame, c) for c in text.columns]
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in text.columns)
        body = "".join("<tr>" + "".join(f'<td class="{"num" if n else "txt"}{_status_class(v)}">{html.escape(str(v))}</td>'
                                        for v, n in zip(row, numeric)) + "</tr>" for row in text.itertuples(index=False))
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    else:
        parts.append('<p class="empty">(no rows)</p>')
    notes = [n for n in table.notes if n]
    if notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    if table.provenance:
        parts.append('<ul class="notes provenance">' + "".join(f"<li>{html.escape(p)}</li>" for p in table.provenance)
                     + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def _status_class(value) -> str:
    text = str(value)
    return " bad" if text == "FAILURE" or "≠" in text else ""


RENDERERS = {"md": (markdown, ".md"), "csv": (csv, ".csv"), "tex": (latex, ".tex")}


def write_tables(tables: list[Table], out: Path, formats: tuple[str, ...]) -> list[Path]:
    """One file per table and format (md, csv, tex) in ``out``; returns the paths written."""
    written = []
    for table in tables:
        for name in formats:
            if name in RENDERERS:
                render, suffix = RENDERERS[name]
                path = out / f"{table.key}{suffix}"
                path.write_text(render(table) + ("" if name == "csv" else "\n"))
                written.append(path)
    return written
