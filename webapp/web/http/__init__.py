"""The web's shared request and response helpers: URLs in (`query`) and out (`links`), bodies
and forms read under bounds (`bodies`), problem responses and the API's JSON (`problems`),
htmx or a full page (`htmx`), templates (`templating`) and their text (`text`), who may frame
an embed (`framing`) and the security headers on every response (`security`)."""
