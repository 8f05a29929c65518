"""A stream's timeline page as one view model (`page.StreamPage`), built by one call from the
request; what it shows of the team's work (`team`)."""
