//! The HTTP/GraphQL adapter against real servers on 127.0.0.1: encoding of path and query
//! values, typed JSON bodies, secrets from the environment, retries, deadlines, the size
//! cap, the host allow-list, GraphQL answers and errors, and response mapping.
//!
//! The modules: `setup` (serving a router on 127.0.0.1, datasources and templates over
//! defaults), `requests` (what is sent: path and query values, JSON bodies, header secrets),
//! `limits` (retries, the deadline, the response size cap), `retries` (which methods are
//! tried again, the `Idempotency-Key`), `opening` (what opening a datasource refuses: the
//! host allow-list, the base URL), `hosts` (`allowed_hosts` matching scheme and port, at
//! open and on redirects), `answers` (GraphQL answers and errors, response mapping).

mod answers;
mod hosts;
mod limits;
mod opening;
mod requests;
mod retries;
mod setup;
