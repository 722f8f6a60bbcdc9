//! The in-process sentence encoder: all-MiniLM-L6-v2 run on candle (CPU only) from a local model
//! folder, implementing the core's `SentenceEncoder`. Nothing here downloads anything: the folder
//! is filled by `make model` (scripts/fetch-model.sh), or is one a user points at.
//!
//! The folder holds `model.safetensors` and `tokenizer.json`, and normally `config.json` (the BERT
//! config; when absent the encoder uses MiniLM-L6's own). Texts are tokenized with truncation at
//! 256 tokens (the length the model was trained on) and padded to the longest text of a batch of
//! at most 64; the token vectors are mean-pooled over the attention mask and L2-normalised, which
//! is what sentence-transformers does for this model, so a dot product is a cosine similarity.
//!
//! Where the folder is looked for ([`Embedder::load_default`], [`model_dir`]): the configured
//! folder when one is given, else `$ONTOLOOP_MODEL_DIR` when set and not empty, else
//! `models/all-MiniLM-L6-v2` at the root of this workspace (where `make model` puts it). A missing
//! folder or file is [`EmbedError::Missing`], so callers can tell it apart and fall back to a
//! lexical scorer.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, HiddenAct, PositionEmbeddingType};
use std::sync::Arc;

use ontoloop_core::knowledge::encoder::{CachedEncoder, EncodeError, KeptVectors, SentenceEncoder};
use ontoloop_core::knowledge::{ExtractSettings, ExtractionSetup, Stage};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Stable id of the model, recorded in the provenance of what it helps extract.
pub const MODEL_ID: &str = "all-MiniLM-L6-v2";
/// Environment variable naming the model folder when none is configured.
pub const MODEL_DIR_ENV: &str = "ONTOLOOP_MODEL_DIR";
/// Tokens per text (special tokens included); longer texts are cut, as the model was trained.
pub const MAX_TOKENS: usize = 256;
/// Texts per forward pass; longer inputs are encoded in several batches.
pub const MAX_BATCH: usize = 64;

const WEIGHTS_FILE: &str = "model.safetensors";
const TOKENIZER_FILE: &str = "tokenizer.json";
const CONFIG_FILE: &str = "config.json";

/// Why the model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model folder or one of its required files does not exist (run `make model`).
    #[error("model file missing: {} (run `make model` or point the model folder at a copy)", path.display())]
    Missing { path: PathBuf },
    #[error("read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parse model config {}: {source}", path.display())]
    Config {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("load tokenizer {}: {message}", path.display())]
    Tokenizer { path: PathBuf, message: String },
    #[error("load model weights {}: {source}", path.display())]
    Weights {
        path: PathBuf,
        #[source]
        source: candle_core::Error,
    },
    #[error("tokenize: {0}")]
    Tokenize(String),
    #[error("run model: {0}")]
    Model(#[from] candle_core::Error),
}

/// The folder [`Embedder::load_default`] loads from: `configured` when given, else
/// `$ONTOLOOP_MODEL_DIR` when set and not empty, else `<workspace>/models/all-MiniLM-L6-v2`.
pub fn model_dir(configured: Option<&Path>) -> PathBuf {
    if let Some(dir) = configured {
        return dir.to_path_buf();
    }
    match std::env::var_os(MODEL_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../models")
            .join(MODEL_ID),
    }
}

/// The extraction setup `settings` ask for: when the semantic stage runs, the model loaded from
/// the configured folder (or the default one) behind a vector cache, with `kept` behind that
/// when given (vectors kept beyond the process); when the folder lacks it, the lexical scorer
/// and the reason, for the caller to say at start-up.
pub fn extraction_setup(
    settings: ExtractSettings,
    kept: Option<Arc<dyn KeptVectors>>,
) -> (ExtractionSetup, Option<EmbedError>) {
    if !settings.any_runs(Stage::Semantic) {
        return (ExtractionSetup::new(settings, None), None);
    }
    let configured =
        (!settings.model_dir.trim().is_empty()).then(|| PathBuf::from(&settings.model_dir));
    match Embedder::load_default(configured.as_deref()) {
        Ok(embedder) => {
            let cached = CachedEncoder::new(Box::new(embedder));
            let encoder: Arc<dyn SentenceEncoder> = Arc::new(match kept {
                Some(kept) => cached.keeping(kept),
                None => cached,
            });
            (ExtractionSetup::new(settings, Some(encoder)), None)
        }
        Err(err) => (ExtractionSetup::new(settings, None), Some(err)),
    }
}

/// What a process with `settings` extracts with, told without loading the model: the stages,
/// whether the semantic stage will find its model, and the model stage's endpoint (for
/// `ontoloop status`).
pub fn describe(settings: &ExtractSettings) -> String {
    let model = match (
        settings.stages.contains(&Stage::Model),
        settings.model.enabled,
    ) {
        (false, _) => String::new(),
        (true, true) => format!(
            "; model: model/{}/{} at {}",
            settings.model.model, settings.model.prompt_version, settings.model.base_url
        ),
        (true, false) => "; model: off ([extract.model] enabled = false)".to_owned(),
    };
    format!("{}{model}", describe_reading(settings))
}

/// The stages and the semantic stage's scorer.
fn describe_reading(settings: &ExtractSettings) -> String {
    let setup = ExtractionSetup::new(settings.clone(), None);
    if !settings.stages.contains(&Stage::Semantic) {
        let described = setup.describe();
        return described
            .split("; model:")
            .next()
            .unwrap_or_default()
            .to_owned();
    }
    let configured =
        (!settings.model_dir.trim().is_empty()).then(|| PathBuf::from(&settings.model_dir));
    let dir = model_dir(configured.as_deref());
    let present = [WEIGHTS_FILE, TOKENIZER_FILE]
        .iter()
        .all(|file| dir.join(file).is_file());
    let stages = setup.describe();
    let stages = stages.split(';').next().unwrap_or_default();
    if present {
        format!("{stages}; semantic: model {MODEL_ID} in {}", dir.display())
    } else {
        format!(
            "{stages}; semantic: lexical fallback (no model in {}; run `make model`)",
            dir.display()
        )
    }
}

/// all-MiniLM-L6-v2 loaded in memory, ready to encode sentences on the CPU.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimension: usize,
    dir: PathBuf,
    fingerprint: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("model", &MODEL_ID)
            .field("dir", &self.dir)
            .field("dimension", &self.dimension)
            .finish()
    }
}

/// Bytes of the weights read, every [`SAMPLE_EVERY`] bytes, into the fingerprint.
const SAMPLE: usize = 64;
/// See [`SAMPLE`].
const SAMPLE_EVERY: usize = 1 << 20;

/// Which weights these are, for the vectors kept beyond the process: [`MODEL_ID`] with a hash of
/// the weights' length, a sample of their bytes and the tokenizer's size, so another model in a
/// folder of the same name never reads this one's vectors (cheaper than hashing every byte).
fn fingerprint(weights: &[u8], tokenizer: &Path) -> String {
    let mut sampled = Vec::with_capacity(weights.len() / SAMPLE_EVERY * SAMPLE + SAMPLE);
    for start in (0..weights.len()).step_by(SAMPLE_EVERY) {
        sampled.extend_from_slice(&weights[start..weights.len().min(start + SAMPLE)]);
    }
    let tokenizer_len = std::fs::metadata(tokenizer).map_or(0, |m| m.len());
    let key = ontoloop_core::digest::sha256_hex(&[
        MODEL_ID.as_bytes(),
        &(weights.len() as u64).to_le_bytes(),
        &tokenizer_len.to_le_bytes(),
        &sampled,
    ]);
    format!("{MODEL_ID}@{}", &key[..16])
}

impl Embedder {
    /// Loads the model from `dir` (see the module docs for the files it needs).
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let weights_path = required(dir, WEIGHTS_FILE)?;
        let tokenizer_path = required(dir, TOKENIZER_FILE)?;
        let config = load_config(&dir.join(CONFIG_FILE))?;

        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| EmbedError::Tokenizer {
                path: tokenizer_path.clone(),
                message: e.to_string(),
            })?;
        // tokenizer.json pads and cuts every text to a fixed 128 tokens; pad a batch only to its
        // longest text and cut at the length the sentence model was trained on instead.
        let padding = PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..tokenizer.get_padding().cloned().unwrap_or_default()
        };
        let truncation = TruncationParams {
            max_length: MAX_TOKENS.min(config.max_position_embeddings),
            ..tokenizer.get_truncation().cloned().unwrap_or_default()
        };
        tokenizer
            .with_padding(Some(padding))
            .with_truncation(Some(truncation))
            .map_err(|e| EmbedError::Tokenizer {
                path: tokenizer_path.clone(),
                message: e.to_string(),
            })?;

        let device = Device::Cpu;
        let bytes = std::fs::read(&weights_path).map_err(|source| EmbedError::Read {
            path: weights_path.clone(),
            source,
        })?;
        let weights_error = |source| EmbedError::Weights {
            path: weights_path.clone(),
            source,
        };
        let fingerprint = fingerprint(&bytes, &tokenizer_path);
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device)
            .map_err(weights_error)?;
        let model = BertModel::load(vb, &config).map_err(weights_error)?;

        let embedder = Self {
            model,
            tokenizer,
            device,
            dimension: config.hidden_size,
            dir: dir.to_path_buf(),
            fingerprint,
        };
        // candle starts its worker threads at the first call, and they keep the priority of the
        // thread that made them: made here, at the loader's, not by a background thread at the
        // lowest (the dense index's), which would slow every later call waiting on them.
        embedder.embed(&["warm up"])?;
        Ok(embedder)
    }

    /// Loads the model from [`model_dir`]`(configured)`.
    pub fn load_default(configured: Option<&Path>) -> Result<Self, EmbedError> {
        Self::load(&model_dir(configured))
    }

    /// Length of every vector this encoder returns (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The folder the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One unit-length vector per text, in order, encoding at most [`MAX_BATCH`] texts at a time.
    /// Texts are batched with others of about their length (a batch is padded to its longest,
    /// and a padded token costs as much as a real one), then put back in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in order.chunks(MAX_BATCH) {
            let batch_texts: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            for (&i, vector) in batch.iter().zip(self.embed_batch(&batch_texts)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        let rows = encodings.len();
        // Padding makes every encoding as long as the longest; take it from the data anyway.
        let width = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        if rows == 0 || width == 0 {
            return Ok(vec![vec![0.0; self.dimension]; rows]);
        }
        let mut ids = vec![0u32; rows * width];
        let mut mask = vec![0u32; rows * width];
        for (row, encoding) in encodings.iter().enumerate() {
            let start = row * width;
            let n = encoding.len();
            ids[start..start + n].copy_from_slice(encoding.get_ids());
            mask[start..start + n].copy_from_slice(encoding.get_attention_mask());
        }
        let ids = Tensor::from_vec(ids, (rows, width), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, width), &self.device)?;
        let token_types = ids.zeros_like()?;

        let tokens = self.model.forward(&ids, &token_types, Some(&mask))?;
        // Mean over the real tokens only, then unit length (sentence-transformers' Pooling and
        // Normalize modules, with their epsilons).
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = tokens.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let pooled = summed.broadcast_div(&counts)?;
        let norms = pooled
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        Ok(pooled.broadcast_div(&norms)?.to_vec2::<f32>()?)
    }
}

impl SentenceEncoder for Embedder {
    fn id(&self) -> &str {
        MODEL_ID
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        self.embed(texts).map_err(|e| EncodeError(e.to_string()))
    }
}

fn required(dir: &Path, file: &str) -> Result<PathBuf, EmbedError> {
    if !dir.is_dir() {
        return Err(EmbedError::Missing {
            path: dir.to_path_buf(),
        });
    }
    let path = dir.join(file);
    if !path.is_file() {
        return Err(EmbedError::Missing { path });
    }
    Ok(path)
}

/// The BERT config in the folder, or MiniLM-L6's own when the folder carries none.
fn load_config(path: &Path) -> Result<Config, EmbedError> {
    if !path.is_file() {
        return Ok(minilm_l6_config());
    }
    let text = std::fs::read_to_string(path).map_err(|source| EmbedError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| EmbedError::Config {
        path: path.to_path_buf(),
        source,
    })
}

fn minilm_l6_config() -> Config {
    Config {
        vocab_size: 30522,
        hidden_size: 384,
        num_hidden_layers: 6,
        num_attention_heads: 12,
        intermediate_size: 1536,
        hidden_act: HiddenAct::Gelu,
        hidden_dropout_prob: 0.1,
        max_position_embeddings: 512,
        type_vocab_size: 2,
        initializer_range: 0.02,
        layer_norm_eps: 1e-12,
        pad_token_id: 0,
        position_embedding_type: PositionEmbeddingType::Absolute,
        use_cache: true,
        classifier_dropout: None,
        model_type: Some("bert".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_folder_wins() {
        let dir = Path::new("/somewhere/else");
        assert_eq!(model_dir(Some(dir)), dir);
    }

    #[test]
    fn default_folder_is_under_the_workspace_models() {
        // The env override is not set in tests; when it is, the configured folder still wins.
        if std::env::var_os(MODEL_DIR_ENV).is_none_or(|d| d.is_empty()) {
            let dir = model_dir(None);
            assert!(
                dir.ends_with("models/all-MiniLM-L6-v2"),
                "{}",
                dir.display()
            );
        }
    }

    #[test]
    fn built_in_config_matches_the_model_card() {
        let c = minilm_l6_config();
        assert_eq!(
            (c.hidden_size, c.num_hidden_layers, c.num_attention_heads),
            (384, 6, 12)
        );
        assert_eq!((c.intermediate_size, c.vocab_size), (1536, 30522));
    }
}
