// EXIF, ICC and XMP from input files to output files with libexiv2, and --auto-orient. EXIF
// travels as the TIFF-structured block exiv2 encodes, so the public header needs no exiv2 type.
#include "codec/metadata.hpp"

#include <cuconv/error.hpp>

#include <exiv2/exiv2.hpp>
#include <opencv2/core.hpp>

#include <mutex>

namespace cuconv {

namespace {

constexpr const char* kOrientationKey = "Exif.Image.Orientation";

/// Serialises the XMP toolkit, which is not thread-safe on its own (batch mode reads and writes
/// metadata on several threads).
std::mutex xmp_mutex;
void lock_xmp(void*, bool lock) {
  if (lock) xmp_mutex.lock();
  else xmp_mutex.unlock();
}

/// exiv2's one-time set-up: the XMP toolkit must be initialised before threads use it, and its
/// own warnings (unknown tags, odd makernotes) are not cuconv's to print.
void init_exiv2() {
  static std::once_flag once;
  std::call_once(once, [] {
    Exiv2::XmpParser::initialize(lock_xmp, nullptr);
    Exiv2::LogMsg::setLevel(Exiv2::LogMsg::mute);
  });
}

Exiv2::ExifData decode_exif(const std::vector<unsigned char>& blob) {
  Exiv2::ExifData exif;
  if (!blob.empty()) Exiv2::ExifParser::decode(exif, blob.data(), static_cast<std::uint32_t>(blob.size()));
  return exif;
}

std::vector<unsigned char> encode_exif(const Exiv2::ExifData& exif) {
  Exiv2::Blob blob;
  if (!exif.empty()) Exiv2::ExifParser::encode(blob, Exiv2::littleEndian, exif);
  return {blob.begin(), blob.end()};
}

}  // namespace

ImageMetadata read_metadata(const std::string& path) {
  init_exiv2();
  ImageMetadata metadata;
  try {
    const Exiv2::Image::AutoPtr image = Exiv2::ImageFactory::open(path);
    image->readMetadata();
    Exiv2::ExifData exif = image->exifData();
    // OpenCV's TIFF decoder applies a TIFF's Orientation itself (IMREAD_UNCHANGED or not): the
    // pixels read_image returns are upright already, so the tag carried on must say so.
    if (image->imageType() == Exiv2::ImageType::tiff) {
      const auto orientation = exif.findKey(Exiv2::ExifKey(kOrientationKey));
      if (orientation != exif.end()) orientation->setValue("1");
    }
    // The block exiv2 would put in a JPEG: a TIFF input's own layout tags (size, strips) are left out.
    metadata.exif = encode_exif(exif);
    if (image->iccProfileDefined()) {
      const Exiv2::DataBuf* icc = image->iccProfile();
      metadata.icc.assign(icc->pData_, icc->pData_ + icc->size_);
    }
    metadata.xmp = image->xmpPacket();
  } catch (const Exiv2::AnyError&) {
    return {};  // a format exiv2 does not know, or a file it cannot parse: no metadata
  }
  return metadata;
}

int exif_orientation(const ImageMetadata& metadata) {
  init_exiv2();
  try {
    const Exiv2::ExifData exif = decode_exif(metadata.exif);
    const auto it = exif.findKey(Exiv2::ExifKey(kOrientationKey));
    if (it == exif.end() || it->count() == 0) return 1;
    const long value = it->toLong();
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  } catch (const Exiv2::AnyError&) {
    return 1;
  }
}

void auto_orient(cv::Mat& image, ImageMetadata& metadata) {
  // EXIF orientations: how the stored rows and columns map to the upright picture.
  switch (exif_orientation(metadata)) {
    case 2: cv::flip(image, image, 1); break;                          // mirrored left-right
    case 3: cv::rotate(image, image, cv::ROTATE_180); break;
    case 4: cv::flip(image, image, 0); break;                          // mirrored top-bottom
    case 5: cv::transpose(image, image); break;                        // mirrored along the main diagonal
    case 6: cv::rotate(image, image, cv::ROTATE_90_CLOCKWISE); break;
    case 7: cv::transpose(image, image); cv::flip(image, image, -1); break;  // along the other diagonal
    case 8: cv::rotate(image, image, cv::ROTATE_90_COUNTERCLOCKWISE); break;
    default: return;  // upright already, or no orientation: nothing to reset
  }
  Exiv2::ExifData exif = decode_exif(metadata.exif);
  exif[kOrientationKey] = std::uint16_t{1};
  metadata.exif = encode_exif(exif);
}

namespace detail {

std::vector<unsigned char> embed_metadata(const std::string& path, std::vector<unsigned char> encoded,
                                          const ImageMetadata& metadata) {
  init_exiv2();
  try {
    const Exiv2::Image::AutoPtr image =
        Exiv2::ImageFactory::open(encoded.data(), static_cast<long>(encoded.size()));
    image->readMetadata();
    if (!metadata.exif.empty()) {
      Exiv2::ExifData merged = image->exifData();  // the encoder's own tags (a TIFF's layout) win
      for (const Exiv2::Exifdatum& datum : decode_exif(metadata.exif))
        if (merged.findKey(Exiv2::ExifKey(datum.key())) == merged.end()) merged.add(datum);
      image->setExifData(merged);
    }
    if (!metadata.icc.empty()) {
      Exiv2::DataBuf icc(metadata.icc.data(), static_cast<long>(metadata.icc.size()));
      image->setIccProfile(icc, false);
    }
    if (!metadata.xmp.empty()) image->setXmpPacket(metadata.xmp);
    image->writeMetadata();
    Exiv2::BasicIo& io = image->io();
    io.seek(0, Exiv2::BasicIo::beg);
    const Exiv2::DataBuf written = io.read(static_cast<long>(io.size()));
    return {written.pData_, written.pData_ + written.size_};
  } catch (const Exiv2::AnyError& e) {
    throw Error(ErrorKind::output, path + ": cannot write the metadata (EXIF, ICC, XMP): " + e.what() +
                                       " (use --strip to leave it out)");
  }
}

}  // namespace detail
}  // namespace cuconv
