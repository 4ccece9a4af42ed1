"""Logging filters for config.settings.LOGGING."""

import logging


class DeniedWithoutTraceback(logging.Filter):
    """Django logs every refused request ("Forbidden (Permission denied): /admin/...") with
    the PermissionDenied's traceback: a page of noise per click of a user without the
    right, which buries real errors. The line stays; the traceback of a 403 goes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
