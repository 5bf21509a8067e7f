//! Kubernetes API server emulator on loopback (built in its own issue).
