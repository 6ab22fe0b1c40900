"""``ragmeter serve``: the local, read-only web UI over a run store (Starlette + uvicorn, the
``web`` extra).

Modules: ``app`` (the app factory :func:`ragmeter.web.app.create_app`, routes, security
headers), ``db`` (read-only paged queries on the store's tables), ``views`` (each page's data,
which its JSON twin returns), ``html``, ``pages``, ``run_pages``, ``case_page`` (rendering,
every stored string escaped), ``charts`` (inline SVG) and ``static`` (the one stylesheet and
script). Nothing here is imported by the rest of ragmeter: only ``ragmeter serve`` loads it.
"""
