//! Integration tests of the bot: ingress against real stores, the runner
//! against the fake GitHub, on SQLite/directory and on DynamoDB/S3 (moto).

mod ancestry;
mod dependents;
mod drift;
mod durable;
mod faults;
mod ingress;
mod layers;
mod local_skills;
mod lock_updates;
mod queue;
mod reconcile;
mod redelivery;
mod registrations;
mod reports;
mod rerequests;
mod retries;
mod routes;
mod runner;
mod skills;
mod state_machines;
mod suggestions;
mod support;
