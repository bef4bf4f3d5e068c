// Apollo Client prints its warnings (missing fields, data loss, no merge function) only in its
// development build. Bundlers pick that build with the "development" export condition; Node does
// not, so the flag is set the way Apollo's default entry reads it, before Apollo is imported.
(globalThis as { __DEV__?: boolean }).__DEV__ = true;
