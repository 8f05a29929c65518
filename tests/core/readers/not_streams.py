"""What people paste that is no chat-completions stream, each with its public origin beside it
(the streams of other APIs that streamviz reads in their own terms are in `native_streams`)."""

from __future__ import annotations

TRACEBACK = """\
Traceback (most recent call last):
  File "/app/stream.py", line 14, in <module>
    for chunk in client.chat.completions.create(
                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/app/.venv/lib/python3.11/site-packages/openai/_base_client.py", line 1049, in request
    raise self._make_status_error_from_response(err.response) from None
openai.InternalServerError: Error code: 502 - {'error': {'message': 'Bad gateway'}}
"""
LOG_LINE = "2024-05-01 12:00:01,123 ERROR stream failed: upstream closed after 17 chunks\n"
# nginx's own 502 page, padding comments and all (ngx_http_special_response.c).
NGINX_502 = """\
<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
</body>
</html>
<!-- a padding to disable MSIE and Chrome friendly error page -->
<!-- a padding to disable MSIE and Chrome friendly error page -->
"""
JS_STACK = """\
TypeError: Cannot read properties of undefined (reading 'choices')
    at Object.<anonymous> (/app/index.js:12:31)
    at Module._compile (node:internal/modules/cjs/loader:1364:14)
"""
