"""The five acceptance scenarios of DESIGN.md as one command (``gw poc run``, ``make poc``).

An interface-layer package that talks to a live gateway over HTTP only, through
the CLI's own client (``gateway.client.api``), as a new user would: it imports
no service, store or wiring module (an import-linter contract checks it).

- ``site``: the POC site file (which project's queues to use, where to write);
- ``checks``: a scenario's checks, each with its step, what was expected and what was seen;
- ``world``: the POC's own project namespace on the gateway, and waiting on runs;
- ``s1_normal`` ... ``s5_trace``: the scenarios; ``cost``: the cost steps;
- ``report``: the evidence bundles and the summary page (JSON and HTML);
- ``runner``: all five in order, with the clean-up.
"""
