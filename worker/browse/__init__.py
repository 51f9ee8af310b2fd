"""What the browsing jobs (``worker.jobs.browse``) read and put together for the web view."""
