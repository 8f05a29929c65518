"""What a team does with stored streams: who owns them and which a browser opened (`owners`),
titles and notes (`notes`), and how long they are kept (`retention`)."""
