//! Large samples read in place: a view of an [`Image`], [`PointCloud`] or [`BenchSample`] whose
//! byte array borrows from where the encoded sample lies instead of being copied out. A reader
//! on the writer's host reads a 4 MB image straight from the writer's shared-memory slot this
//! way (`Subscriber::take_views`); one that came over the network is viewed from its decoded
//! value. Each view lists the fields of its message in IDL order, as CDR decoding needs.

use serde::{Deserialize, Serialize};

use crate::messages::{BenchSample, Image, Message, PointCloud, PointField, SensorHeader};

/// An unkeyed message with a view borrowed from its encoded bytes.
pub trait Viewable: Message<Key = ()> {
    /// Encodes as the message does (a recorder writes a view as the sample).
    type View<'a>: Deserialize<'a> + Serialize;
    /// The view of a value already decoded.
    fn view(&self) -> Self::View<'_>;
    /// [`Message::sim_time_ns`] of a view.
    fn view_sim_time_ns(_view: &Self::View<'_>) -> Option<u64> {
        None
    }
}

/// [`Image`], its pixels borrowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageView<'a> {
    pub header: SensorHeader,
    pub width: u32,
    pub height: u32,
    pub encoding: String,
    pub step: u32,
    #[serde(borrow, with = "serde_bytes")]
    pub data: &'a [u8],
}

impl Viewable for Image {
    type View<'a> = ImageView<'a>;
    fn view_sim_time_ns(view: &ImageView<'_>) -> Option<u64> {
        u64::try_from(view.header.stamp_ns).ok()
    }
    fn view(&self) -> ImageView<'_> {
        ImageView {
            header: self.header.clone(),
            width: self.width,
            height: self.height,
            encoding: self.encoding.clone(),
            step: self.step,
            data: &self.data,
        }
    }
}

/// [`PointCloud`], its points borrowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointCloudView<'a> {
    pub header: SensorHeader,
    pub point_count: u32,
    pub point_step: u32,
    pub fields: Vec<PointField>,
    #[serde(borrow, with = "serde_bytes")]
    pub data: &'a [u8],
}

impl Viewable for PointCloud {
    type View<'a> = PointCloudView<'a>;
    fn view_sim_time_ns(view: &PointCloudView<'_>) -> Option<u64> {
        u64::try_from(view.header.stamp_ns).ok()
    }
    fn view(&self) -> PointCloudView<'_> {
        PointCloudView {
            header: self.header.clone(),
            point_count: self.point_count,
            point_step: self.point_step,
            fields: self.fields.clone(),
            data: &self.data,
        }
    }
}

/// [`BenchSample`], its payload borrowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchSampleView<'a> {
    pub seq: u64,
    pub sent_ns: i64,
    #[serde(borrow, with = "serde_bytes")]
    pub payload: &'a [u8],
}

impl Viewable for BenchSample {
    type View<'a> = BenchSampleView<'a>;
    fn view(&self) -> BenchSampleView<'_> {
        BenchSampleView {
            seq: self.seq,
            sent_ns: self.sent_ns,
            payload: &self.payload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dds::wire;
    use rustdds::RepresentationIdentifier;

    /// A view decodes from a message's CDR bytes to the value's own view, its byte array
    /// pointing into those bytes (no copy).
    #[test]
    fn a_view_decodes_in_place_to_what_the_value_shows() {
        let image = Image {
            header: SensorHeader {
                agent: "ego".into(),
                sensor: "front".into(),
                frame: 7,
                stamp_ns: 70_000_000,
                seq: 3,
            },
            width: 4,
            height: 2,
            encoding: "rgb8".into(),
            step: 12,
            data: (0..24).collect(),
        };
        let bytes = wire::encode(&image).expect("encode");
        let view: ImageView<'_> =
            wire::decode(Image::TYPE_NAME, &bytes, RepresentationIdentifier::CDR_LE)
                .expect("decode a view");
        assert_eq!(view, image.view());
        let inside = bytes.as_ptr_range();
        assert!(
            inside.contains(&view.data.as_ptr()),
            "the pixels were copied"
        );

        let cloud = PointCloud {
            point_count: 2,
            point_step: 16,
            fields: vec![PointField {
                name: "x".into(),
                ..PointField::default()
            }],
            data: (0..32).collect(),
            ..PointCloud::default()
        };
        let bytes = wire::encode(&cloud).expect("encode");
        let view: PointCloudView<'_> = wire::decode(
            PointCloud::TYPE_NAME,
            &bytes,
            RepresentationIdentifier::CDR_LE,
        )
        .expect("decode a view");
        assert_eq!(view, cloud.view());

        let sample = BenchSample {
            seq: 9,
            sent_ns: -1,
            payload: vec![5; 100],
        };
        let bytes = wire::encode(&sample).expect("encode");
        let view: BenchSampleView<'_> = wire::decode(
            BenchSample::TYPE_NAME,
            &bytes,
            RepresentationIdentifier::CDR_LE,
        )
        .expect("decode a view");
        assert_eq!(view, sample.view());
    }
}
