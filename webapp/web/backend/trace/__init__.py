"""A trace view (`view`) and its parts, each built once per trace: the runs of alike steps
(`runs`), the overview strip (`overview`), the anomalies by code (`anomaly_groups`), a long
block's text at any step (`arguments`); the view as bytes kept beside its stream (`stored`) and
the thread that keeps them (`keeper`)."""
