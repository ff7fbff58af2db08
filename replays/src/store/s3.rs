//! The S3-compatible object-store backend (AWS S3, MinIO, moto, …) through the
//! `object_store` crate.

use std::str::FromStr;

use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::ReplayError;
use crate::store::StoreBackend;

#[derive(Debug)]
pub struct S3Backend {
    store: AmazonS3,
    /// The key prefix inside the bucket, without slashes at either end.
    prefix: String,
}

fn store_error(error: object_store::Error) -> ReplayError {
    ReplayError::Store(error.to_string())
}

impl S3Backend {
    /// `bucket_and_prefix` is what follows `s3://`. Settings come from the
    /// standard `AWS_*` environment variables, then `options` (config keys such
    /// as `aws_endpoint` or `aws_allow_http`).
    pub fn open(
        bucket_and_prefix: &str,
        options: &[(&str, &str)],
    ) -> Result<S3Backend, ReplayError> {
        let (bucket, prefix) = match bucket_and_prefix.split_once('/') {
            Some((bucket, prefix)) => (bucket, prefix.trim_matches('/')),
            None => (bucket_and_prefix, ""),
        };
        if bucket.is_empty() {
            return Err(ReplayError::Store(
                "s3:// URL has no bucket name".to_owned(),
            ));
        }
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        for (key, value) in options {
            let key = AmazonS3ConfigKey::from_str(key).map_err(|error| {
                ReplayError::Store(format!("unknown S3 option {key:?}: {error}"))
            })?;
            builder = builder.with_config(key, *value);
        }
        let store = builder.build().map_err(store_error)?;
        Ok(S3Backend {
            store,
            prefix: prefix.to_owned(),
        })
    }

    fn object_path(&self, key: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(key)
        } else {
            ObjectPath::from(format!("{}/{key}", self.prefix))
        }
    }
}

impl StoreBackend for S3Backend {
    fn put<'a>(&'a self, key: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, Result<(), ReplayError>> {
        Box::pin(async move {
            self.store
                .put(&self.object_path(key), PutPayload::from(bytes))
                .await
                .map_err(store_error)?;
            Ok(())
        })
    }

    fn put_new<'a>(
        &'a self,
        key: &'a str,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<bool, ReplayError>> {
        Box::pin(async move {
            // `If-None-Match: *`: the server refuses a put over an existing key.
            let options = PutOptions {
                mode: PutMode::Create,
                ..PutOptions::default()
            };
            match self
                .store
                .put_opts(&self.object_path(key), PutPayload::from(bytes), options)
                .await
            {
                Ok(_) => Ok(true),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
                Err(error) => Err(store_error(error)),
            }
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, ReplayError>> {
        Box::pin(async move {
            match self.store.get(&self.object_path(key)).await {
                Ok(result) => Ok(Some(result.bytes().await.map_err(store_error)?.to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(error) => Err(store_error(error)),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), ReplayError>> {
        Box::pin(async move {
            match self.store.delete(&self.object_path(key)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(error) => Err(store_error(error)),
            }
        })
    }

    fn list_after<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<String>, ReplayError>> {
        Box::pin(async move {
            let folder = self.object_path(prefix);
            let stream = match after {
                Some(after) => self.store.list_with_offset(
                    Some(&folder),
                    &self.object_path(&format!("{prefix}/{after}")),
                ),
                None => self.store.list(Some(&folder)),
            };
            let metas: Vec<_> = stream
                .take(limit)
                .try_collect()
                .await
                .map_err(store_error)?;
            let mut names: Vec<String> = metas
                .into_iter()
                .filter_map(|meta| meta.location.filename().map(str::to_owned))
                .collect();
            // S3 lists in key order; sorting keeps that promise for stores that do not.
            names.sort_unstable();
            Ok(names)
        })
    }
}
