"""What runs Tally, beside its settings (config/): the process supervisor `make run`
starts (runner.py), the HTTP front granian serves (front.py: whole requests, then
Django), the AOF repair run before the embedded server starts (aof_repair.py), and the
web layer's own parts: middleware, the throttled login view, share-link limits."""
