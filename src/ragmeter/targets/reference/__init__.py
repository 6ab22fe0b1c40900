"""Reference pipeline: chunking, BM25, extractive answers, HTTP server."""
