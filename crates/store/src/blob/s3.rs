//! `s3://BUCKET[/prefix]`: the AWS blob store, through `aws-sdk-s3`.

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::{ByteStream, Length};
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

use super::{
    BlobBody, BlobCounters, BlobKey, BlobOptions, BlobStats, BlobStore, MIN_PART_SIZE, PutOutcome,
};
use crate::aws::{S3, load_sdk_config, map_sdk_error};
use crate::location::check_s3_bucket_and_prefix;
use crate::{BoxFuture, StoreError, StoreResult};

/// Objects in one bucket, under an optional key prefix.
///
/// `put_if_absent` of a body up to `multipart_threshold` is one PUT with `If-None-Match: *`:
/// an existing object, or a concurrent writer of the same key, makes it a no-op (`412
/// Precondition Failed` is reported as `AlreadyExists`), so it needs no existence check of
/// its own. A bigger body is asked about first (HEAD), then sent as a multipart upload, one
/// part in memory (or streamed from the file) at a time, completed with the same condition;
/// a failed multipart upload is aborted.
///
/// Permissions: `s3:GetObject`, `s3:PutObject` and `s3:AbortMultipartUpload` on the objects,
/// and `s3:ListBucket` on the bucket: without it S3 answers a HEAD of a missing object with
/// 403 instead of 404, and every first upload would fail.
#[derive(Debug)]
pub struct S3BlobStore {
    client: Client,
    bucket: String,
    prefix: String,
    options: BlobOptions,
    counters: BlobCounters,
}

impl S3BlobStore {
    /// A store on `bucket` with credentials, region and endpoint from the environment.
    /// When an endpoint URL is configured (`AWS_ENDPOINT_URL`, e.g. moto), path-style
    /// addressing is used, since local endpoints have no per-bucket DNS names.
    pub async fn from_env(bucket: &str, prefix: &str, options: BlobOptions) -> StoreResult<Self> {
        let sdk_config = load_sdk_config().await;
        let config = aws_sdk_s3::config::Builder::from(&sdk_config)
            .force_path_style(sdk_config.endpoint_url().is_some())
            .build();
        Self::new(Client::from_conf(config), bucket, prefix, options)
    }

    /// A store on `bucket` with a ready client.
    pub fn new(
        client: Client,
        bucket: &str,
        prefix: &str,
        options: BlobOptions,
    ) -> StoreResult<Self> {
        check_s3_bucket_and_prefix(bucket, prefix)?;
        let prefix = prefix.trim_matches('/');
        Ok(S3BlobStore {
            client,
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
            options,
            counters: BlobCounters::default(),
        })
    }

    /// Creates the bucket (for tests and local set-up); an existing bucket we own is fine.
    pub async fn create_bucket(&self) -> StoreResult<()> {
        match self
            .client
            .create_bucket()
            .bucket(&self.bucket)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(err)
                if matches!(
                    err.code(),
                    Some("BucketAlreadyOwnedByYou" | "BucketAlreadyExists")
                ) =>
            {
                Ok(())
            }
            Err(err) => Err(map_sdk_error(S3, "CreateBucket", err)),
        }
    }

    fn object_key(&self, key: &BlobKey) -> String {
        if self.prefix.is_empty() {
            key.as_str().to_owned()
        } else {
            format!("{}/{}", self.prefix, key)
        }
    }

    async fn head(&self, object_key: &str) -> StoreResult<bool> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(object_key)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(err) if err.as_service_error().is_some_and(|e| e.is_not_found()) => Ok(false),
            Err(err) => Err(map_sdk_error(S3, "HeadObject", err)),
        }
    }

    async fn put_single(
        &self,
        object_key: &str,
        body: BlobBody,
        content_type: &str,
    ) -> StoreResult<PutOutcome> {
        let stream = match body {
            BlobBody::Bytes(bytes) => ByteStream::from(bytes),
            BlobBody::File(path) => ByteStream::from_path(&path)
                .await
                .map_err(|err| StoreError::Invalid(format!("{}: {err}", path.display())))?,
        };
        let sent = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(object_key)
            .content_type(content_type)
            .if_none_match("*")
            .body(stream)
            .send()
            .await;
        match sent {
            Ok(_) => Ok(PutOutcome::Created),
            Err(err) if is_precondition_failed(err.code()) => Ok(PutOutcome::AlreadyExists),
            Err(err) => Err(map_sdk_error(S3, "PutObject", err)),
        }
    }

    async fn put_multipart(
        &self,
        object_key: &str,
        body: &BlobBody,
        size: u64,
        content_type: &str,
    ) -> StoreResult<PutOutcome> {
        let created = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(object_key)
            .content_type(content_type)
            .send()
            .await
            .map_err(|err| map_sdk_error(S3, "CreateMultipartUpload", err))?;
        let upload_id = created
            .upload_id()
            .ok_or_else(|| {
                StoreError::Unavailable("CreateMultipartUpload returned no upload id".into())
            })?
            .to_owned();
        let result = self
            .upload_parts_and_complete(object_key, &upload_id, body, size)
            .await;
        if !matches!(result, Ok(PutOutcome::Created)) {
            // Best effort: an upload left open only costs storage until a lifecycle rule ends it.
            let aborted = self
                .client
                .abort_multipart_upload()
                .bucket(&self.bucket)
                .key(object_key)
                .upload_id(&upload_id)
                .send()
                .await;
            if let Err(err) = aborted {
                tracing::warn!(key = object_key, error = %map_sdk_error(S3, "AbortMultipartUpload", err), "could not abort multipart upload");
            }
        }
        result
    }

    async fn upload_parts_and_complete(
        &self,
        object_key: &str,
        upload_id: &str,
        body: &BlobBody,
        size: u64,
    ) -> StoreResult<PutOutcome> {
        let part_size = self.options.part_size.max(MIN_PART_SIZE);
        let mut parts = Vec::new();
        let mut offset = 0u64;
        while offset < size {
            let length = part_size.min(size - offset);
            let part_number = i32::try_from(parts.len() + 1)
                .ok()
                .filter(|n| *n <= 10_000)
                .ok_or_else(|| {
                    StoreError::Invalid(
                        "object needs more than 10,000 parts: raise part_size".into(),
                    )
                })?;
            let stream = part_stream(body, offset, length).await?;
            let uploaded = self
                .client
                .upload_part()
                .bucket(&self.bucket)
                .key(object_key)
                .upload_id(upload_id)
                .part_number(part_number)
                .body(stream)
                .send()
                .await
                .map_err(|err| map_sdk_error(S3, "UploadPart", err))?;
            parts.push(
                CompletedPart::builder()
                    .part_number(part_number)
                    .set_e_tag(uploaded.e_tag().map(str::to_owned))
                    .build(),
            );
            offset += length;
        }
        let part_count = parts.len() as u64;
        let completed = self
            .client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(object_key)
            .upload_id(upload_id)
            .if_none_match("*")
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await;
        match completed {
            Ok(_) => {
                self.counters.record_multipart(part_count);
                Ok(PutOutcome::Created)
            }
            Err(err) if is_precondition_failed(err.code()) => Ok(PutOutcome::AlreadyExists),
            Err(err) => Err(map_sdk_error(S3, "CompleteMultipartUpload", err)),
        }
    }
}

fn is_precondition_failed(code: Option<&str>) -> bool {
    code == Some("PreconditionFailed")
}

/// The bytes `offset..offset + length` of the body; a file part is streamed from disk.
async fn part_stream(body: &BlobBody, offset: u64, length: u64) -> StoreResult<ByteStream> {
    match body {
        BlobBody::Bytes(bytes) => {
            let range = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(offset + length).ok());
            let part = range
                .and_then(|(start, end)| bytes.get(start..end))
                .ok_or_else(|| StoreError::Invalid("part range outside the body".into()))?;
            Ok(ByteStream::from(part.to_vec()))
        }
        BlobBody::File(path) => ByteStream::read_from()
            .path(path)
            .offset(offset)
            .length(Length::Exact(length))
            .build()
            .await
            .map_err(|err| StoreError::Invalid(format!("{}: {err}", path.display()))),
    }
}

impl BlobStore for S3BlobStore {
    fn put_if_absent<'a>(
        &'a self,
        key: &'a BlobKey,
        body: BlobBody,
        content_type: &'a str,
    ) -> BoxFuture<'a, StoreResult<PutOutcome>> {
        Box::pin(async move {
            let object_key = self.object_key(key);
            let size = body.len().await?;
            // A single PUT is conditional (`If-None-Match: *`), so it is its own existence
            // check: one round trip. A multipart upload asks first, since its condition is
            // only checked once every part is sent.
            let outcome = if size <= self.options.multipart_threshold {
                self.put_single(&object_key, body, content_type).await?
            } else if self.head(&object_key).await? {
                PutOutcome::AlreadyExists
            } else {
                self.put_multipart(&object_key, &body, size, content_type)
                    .await?
            };
            self.counters.record(outcome);
            Ok(outcome)
        })
    }

    fn get<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<Vec<u8>>> {
        Box::pin(async move {
            let object_key = self.object_key(key);
            let output = match self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(&object_key)
                .send()
                .await
            {
                Ok(output) => output,
                Err(err) if err.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
                    return Err(StoreError::NotFound(format!("blob {key}")));
                }
                Err(err) => return Err(map_sdk_error(S3, "GetObject", err)),
            };
            let bytes = output.body.collect().await.map_err(|err| {
                StoreError::Unavailable(format!("GetObject {key}: reading the body: {err}"))
            })?;
            Ok(bytes.to_vec())
        })
    }

    fn exists<'a>(&'a self, key: &'a BlobKey) -> BoxFuture<'a, StoreResult<bool>> {
        Box::pin(async move { self.head(&self.object_key(key)).await })
    }

    fn presigned_get_url<'a>(
        &'a self,
        key: &'a BlobKey,
        expiry: Duration,
    ) -> BoxFuture<'a, StoreResult<String>> {
        Box::pin(async move {
            let config = PresigningConfig::expires_in(expiry).map_err(|err| {
                StoreError::Invalid(format!("presigned URL expiry {expiry:?}: {err}"))
            })?;
            let request = self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(self.object_key(key))
                .presigned(config)
                .await
                .map_err(|err| map_sdk_error(S3, "PresignGetObject", err))?;
            Ok(request.uri().to_owned())
        })
    }

    fn stats(&self) -> BlobStats {
        self.counters.snapshot()
    }

    fn location(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }
}
