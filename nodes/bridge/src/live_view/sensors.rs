//! Camera images and lidar clouds as Foxglove's RawImage and PointCloud: the same bytes, the
//! header's agent as the frame (a cloud is in its agent's frame, DESIGN.md "Sensors"), sim time
//! as the timestamp.

use convoy_core::messages::{Image, PointCloud, PointFieldType};
use foxglove::messages::packed_element_field::NumericType;
use foxglove::messages::{PackedElementField, PointCloud as FoxCloud, RawImage};

use super::scene::timestamp;

/// A camera frame (rgb8 colour, 32FC1 depth or mono8 classes) as a RawImage.
pub fn raw_image(image: Image) -> RawImage {
    RawImage {
        timestamp: Some(timestamp(image.header.stamp_ns)),
        frame_id: image.header.agent,
        width: image.width,
        height: image.height,
        encoding: image.encoding,
        step: image.step,
        data: image.data.into(),
    }
}

fn numeric_type(t: PointFieldType) -> NumericType {
    match t {
        PointFieldType::Int8 => NumericType::Int8,
        PointFieldType::Uint8 => NumericType::Uint8,
        PointFieldType::Int16 => NumericType::Int16,
        PointFieldType::Uint16 => NumericType::Uint16,
        PointFieldType::Int32 => NumericType::Int32,
        PointFieldType::Uint32 => NumericType::Uint32,
        PointFieldType::Float32 => NumericType::Float32,
        PointFieldType::Float64 => NumericType::Float64,
    }
}

/// A lidar cloud as a PointCloud in its agent's frame; its packed points are passed through.
pub fn point_cloud(cloud: PointCloud) -> FoxCloud {
    FoxCloud {
        timestamp: Some(timestamp(cloud.header.stamp_ns)),
        frame_id: cloud.header.agent,
        pose: None,
        point_stride: cloud.point_step,
        fields: cloud
            .fields
            .iter()
            .map(|f| PackedElementField {
                name: f.name.clone(),
                offset: f.offset,
                r#type: numeric_type(f.datatype) as i32,
            })
            .collect(),
        data: cloud.data.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use convoy_core::messages::{PointField, SensorHeader};

    fn header() -> SensorHeader {
        SensorHeader {
            agent: "ego".into(),
            sensor: "front".into(),
            stamp_ns: 250_000_000,
            ..Default::default()
        }
    }

    #[test]
    fn an_image_keeps_its_pixels_and_names_its_agent_as_frame() {
        let image = raw_image(Image {
            header: header(),
            width: 2,
            height: 1,
            encoding: "rgb8".into(),
            step: 6,
            data: vec![1, 2, 3, 4, 5, 6],
        });
        assert_eq!((image.width, image.height, image.step), (2, 1, 6));
        assert_eq!(image.frame_id, "ego");
        assert_eq!(&image.data[..], &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_cloud_keeps_its_layout() {
        let field = |name: &str, offset| PointField {
            name: name.into(),
            offset,
            datatype: PointFieldType::Float32,
        };
        let cloud = point_cloud(PointCloud {
            header: header(),
            point_count: 1,
            point_step: 16,
            fields: vec![
                field("x", 0),
                field("y", 4),
                field("z", 8),
                field("intensity", 12),
            ],
            data: vec![0; 16],
        });
        assert_eq!(cloud.point_stride, 16);
        assert_eq!(cloud.fields[3].name, "intensity");
        assert_eq!(cloud.fields[3].r#type, NumericType::Float32 as i32);
        assert_eq!(cloud.frame_id, "ego");
        assert_eq!(cloud.data.len(), 16);
    }
}
