"""``learning-memory ui``: a local web view of what the memory holds, and the place to correct it.

- ``app``: the Starlette application, its lifespan (one job transport, as the server has) and routes;
- ``access``: who may reach it (loopback, or a bearer token) and the form token that guards writes;
- ``pages``: the pages (GET only reads), ``actions``: the curation forms (POST), ``api``: JSON for
  the cluster map and the code page's live progress;
- ``journal_view``: the GHAP journal read without writing to it;
- ``render``: templates and the error page every bad input ends on.
"""
