//! The HTTP servers, by what each file does; inside the folder imports run one way,
//! from the listener down to the responses:
//!
//! - `server`: the listener (connection cap, workers, the stop) and hyper's server with
//!   the routing of every path that is not a call endpoint;
//! - `http1`: the broker's own HTTP/1.1 server for the call endpoints;
//! - `admin`: the console's routes (`/admin...`);
//! - `hub`: the hub's routes (`/hub...`);
//! - `calls`: the call endpoints (`POST /`, `POST /mcp`, `POST /mcp/<service>/<tool>`),
//!   answered alike by either server;
//! - `jsonrpc`: the `POST /` reader; `projection`: the OpenAPI projection;
//! - `request`: a request's body within its limits and its caller;
//! - `response`: a [`crate::reply::Reply`] on the wire (the own server's text, hyper's
//!   response) and the one error body of a refused request; `bounds`: what a connection may cost; `tls`: the certificate
//!   and key of `[tls]`, reloaded on `SIGHUP`.
//!
//! May import everything below it: the call driver, the MCP endpoint, webhooks, and the
//! stages under them. Only `cli` (tool-broker) and the differential oracles import it.

pub mod admin;
pub mod bounds;
pub mod calls;
pub mod http1;
pub mod hub;
pub mod jsonrpc;
pub mod projection;
pub mod request;
pub mod response;
pub mod server;
pub mod tls;
