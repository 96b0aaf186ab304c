//! The webhook function against the sample events in `events/`: each one's
//! expected status, the job it queues, redelivery, and the SQS FIFO queue on moto.

mod events;
mod sqs;
mod stack;
mod support;
