"""Running a study on a crowd platform: the providers (one folder each), publishing and its log, the provider settings form, and the identities a platform never confirmed."""
