"""The accounts an admin manages in the app's own pages: researchers invited with a one-time set-password
link (:mod:`.links`), accounts switched off and on (:mod:`.activation`), and the lists of researchers,
annotator accounts and invited workers (:mod:`.roster`)."""
