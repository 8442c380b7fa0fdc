//! Compresses the web page's files once, when the crate is built: `OUT_DIR/<name>.br` and
//! `OUT_DIR/<name>.gz` for each file of `web/` and `web/vendor/`, which `src/web.rs` embeds
//! beside the originals and serves to browsers that accept them. Compressing here costs the
//! build about a second and each request nothing (docs/decisions.md, "The web page, round 2").

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn Error>> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    for dir in ["web", "web/vendor"] {
        println!("cargo::rerun-if-changed={dir}");
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let served = ["html", "css", "js"]
                .iter()
                .any(|ext| path.extension().is_some_and(|e| e == *ext));
            if served {
                compress(&path, &out)
                    .map_err(|e| format!("compressing {}: {e}", path.display()))?;
            }
        }
    }
    Ok(())
}

fn compress(path: &Path, out: &Path) -> Result<(), Box<dyn Error>> {
    let body = std::fs::read(path)?;
    let name = path.file_name().ok_or("a file name")?.to_string_lossy();

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gzip.write_all(&body)?;
    std::fs::write(out.join(format!("{name}.gz")), gzip.finish()?)?;

    let mut brotli = Vec::new();
    let params = brotli::enc::BrotliEncoderParams {
        quality: 11,
        lgwin: 22,
        ..Default::default()
    };
    brotli::BrotliCompress(&mut body.as_slice(), &mut brotli, &params)?;
    std::fs::write(out.join(format!("{name}.br")), brotli)?;
    Ok(())
}
