//! The driver against loopback servers, with a trivial wire format.
