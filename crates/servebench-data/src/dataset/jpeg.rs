//! Image bytes as vLLM sends them: vLLM's `process_image` opens the bytes of a dataset's image
//! cell with PIL, converts the picture to RGB and saves it as a JPEG (PIL's default quality, 75;
//! 4:2:0 chroma subsampling), then sends `data:image/jpeg;base64,…`. Here the bytes are decoded
//! with the `image` crate (PNG, JPEG, GIF — its first frame —, WebP, BMP, TIFF), flattened to
//! RGB (alpha dropped, as PIL's `convert("RGB")` does) and encoded with `jpeg-encoder` at the
//! same quality and subsampling. The encoders differ, so the bytes are not PIL's, but the
//! picture, its size, its type and the payload's order of magnitude are — which is what the
//! server's decode and prefill cost depend on.

/// PIL's default JPEG quality.
pub const PIL_DEFAULT_QUALITY: u8 = 75;

use super::problem::Problem;

/// Decodes `bytes` and re-encodes the picture as an RGB JPEG of quality 75. The error names the
/// format problem in one line and keeps the decoder's or encoder's error as its cause.
pub fn reencode_as_jpeg(bytes: &[u8]) -> Result<Vec<u8>, Problem> {
    let picture =
        image::load_from_memory(bytes).map_err(|e| Problem::caused("image bytes cannot be decoded", e))?;
    let rgb = picture.to_rgb8();
    let (w, h) = (u16::try_from(rgb.width()), u16::try_from(rgb.height()));
    let (Ok(w), Ok(h)) = (w, h) else {
        return Err(
            format!("a {}×{} image is larger than JPEG allows (65,535)", rgb.width(), rgb.height()).into()
        );
    };
    let mut out = Vec::with_capacity(rgb.len() / 8);
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, PIL_DEFAULT_QUALITY);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
    encoder
        .encode(rgb.as_raw(), w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| Problem::caused("the image could not be encoded as JPEG", e))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `w`×`h` RGBA PNG with a horizontal gradient and half-transparent pixels.
    pub(crate) fn png(w: u32, h: u32) -> Vec<u8> {
        let img =
            image::RgbaImage::from_fn(w, h, |x, y| image::Rgba([(x * 4) as u8, (y * 4) as u8, 128, 100]));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgba8(img).write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_png_comes_back_as_an_rgb_jpeg_of_the_same_size() {
        let jpeg = reencode_as_jpeg(&png(56, 28)).unwrap();
        assert_eq!(&jpeg[..3], b"\xff\xd8\xff", "JPEG magic");
        let back = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((back.width(), back.height()), (56, 28));
        assert_eq!(back.color(), image::ColorType::Rgb8);
        // Re-encoding a JPEG gives a JPEG again (vLLM re-encodes JPEG cells too).
        assert_eq!(&reencode_as_jpeg(&jpeg).unwrap()[..3], b"\xff\xd8\xff");
    }

    #[test]
    fn undecodable_bytes_are_a_one_line_problem_not_a_panic() {
        let e = reencode_as_jpeg(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap_err();
        assert!(e.text.starts_with("image bytes cannot be decoded: "), "{e}");
        assert!(!e.text.contains('\n'));
        assert!(e.cause.as_ref().is_some_and(|c| c.downcast_ref::<image::ImageError>().is_some()), "{e:?}");
        assert!(reencode_as_jpeg(b"").is_err());
    }
}
