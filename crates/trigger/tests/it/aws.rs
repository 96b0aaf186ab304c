//! aws
