"""The migration pages' stylesheet, inline in each page (their Content-Security-Policy
allows inline style and nothing else). Light and dark follow the reader's setting."""

STYLE = """
:root { color-scheme: light dark; --line: #8884; --bad: #c62828; --ok: #2e7d32; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 110rem;
       padding: 0 1rem; }
h1 .mode { font-size: .6em; border: 1px solid var(--line); border-radius: .3em;
           padding: .1em .4em; vertical-align: middle; }
h2 { margin-top: 1.8rem; border-bottom: 1px solid var(--line); }
h2 small { font-weight: normal; font-size: .65em; }
h3 { font: 600 13px/1.4 ui-monospace, monospace; margin: 0 0 .5rem; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid var(--line); padding: .2rem .5rem; text-align: left;
         vertical-align: top; overflow-wrap: anywhere; }
td { font-family: ui-monospace, monospace; font-size: 13px; }
.bad { color: var(--bad); } .ok { color: var(--ok); }
.dis { border: 1px solid var(--line); border-radius: .4rem; padding: .8rem; margin: 1rem 0; }
.sides { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: .6rem; }
.sides h4 { margin: .4rem 0 .2rem; }
pre { margin: 0; padding: .5rem; border: 1px solid var(--line); max-height: 32rem;
      overflow: auto; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
@media (max-width: 60rem) { .sides { grid-template-columns: 1fr; } }
"""
