//! The report's charts as inline SVG: a plot area with axes, lines, bars and markers.
//! Written by hand so the page carries no script and fetches nothing.

use std::fmt::Write;

use super::escape::escape;

const WIDTH: f64 = 520.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 44.0;

/// One line of a chart: its points in data coordinates and its legend.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub class: &'static str,
}

/// A chart on the unit square's domain `[x0, x1] × [y0, y1]`, drawn into an SVG element
/// that names itself with `data-chart`, so a test finds each chart by name.
pub struct Plot {
    name: &'static str,
    x: (f64, f64),
    y: (f64, f64),
    body: String,
    legend: Vec<(String, &'static str)>,
}

impl Plot {
    pub fn new(name: &'static str, x: (f64, f64), y: (f64, f64)) -> Plot {
        Plot {
            name,
            x,
            y,
            body: String::new(),
            legend: Vec::new(),
        }
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + (x - self.x.0) / (self.x.1 - self.x.0) * (WIDTH - LEFT - RIGHT)
    }

    fn py(&self, y: f64) -> f64 {
        HEIGHT - BOTTOM - (y - self.y.0) / (self.y.1 - self.y.0) * (HEIGHT - TOP - BOTTOM)
    }

    /// Axes with `ticks` evenly spaced labels each, formatted as percentages when the
    /// axis runs over [0, 1].
    pub fn axes(&mut self, x_label: &str, y_label: &str, ticks: usize) {
        let (x0, x1, y0, y1) = (
            self.px(self.x.0),
            self.px(self.x.1),
            self.py(self.y.0),
            self.py(self.y.1),
        );
        let _ = write!(
            self.body,
            r#"<path class="axis" d="M{x0:.1},{y1:.1}V{y0:.1}H{x1:.1}"/>"#
        );
        for i in 0..=ticks {
            let t = i as f64 / ticks as f64;
            let (xv, yv) = (
                self.x.0 + t * (self.x.1 - self.x.0),
                self.y.0 + t * (self.y.1 - self.y.0),
            );
            let (xp, yp) = (self.px(xv), self.py(yv));
            let _ = write!(
                self.body,
                r#"<path class="grid" d="M{x0:.1},{yp:.1}H{x1:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text><text class="tick" x="{xp:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                x0 - 6.0,
                yp + 4.0,
                label(yv, self.y),
                y0 + 16.0,
                label(xv, self.x),
            );
        }
        let _ = write!(
            self.body,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="label" transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (x0 + x1) / 2.0,
            HEIGHT - 6.0,
            escape(x_label),
            (y0 + y1) / 2.0,
            escape(y_label)
        );
    }

    pub fn line(&mut self, series: &Series) {
        if series.points.is_empty() {
            return;
        }
        let mut d = String::new();
        for (i, (x, y)) in series.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if i == 0 { 'M' } else { 'L' },
                self.px(*x),
                self.py(*y)
            );
        }
        let _ = write!(
            self.body,
            r#"<path class="series {}" d="{d}"><title>{}</title></path>"#,
            series.class,
            escape(&series.name)
        );
        self.legend.push((series.name.clone(), series.class));
    }

    /// A bar from `y0` up to `y` over `[x_from, x_to]`, with a tooltip.
    pub fn bar(&mut self, x_from: f64, x_to: f64, y: f64, class: &str, tip: &str) {
        let (left, right) = (self.px(x_from), self.px(x_to));
        let (top, bottom) = (self.py(y), self.py(self.y.0));
        let _ = write!(
            self.body,
            r#"<rect class="bar {class}" x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
            (right - left - 2.0).max(1.0),
            (bottom - top).max(0.5),
            escape(tip)
        );
    }

    /// A vertical marker at `x`, labelled.
    pub fn vline(&mut self, x: f64, text: &str) {
        let xp = self.px(x);
        let _ = write!(
            self.body,
            r#"<path class="marker" d="M{xp:.1},{:.1}V{:.1}"/><text class="marker-label" x="{:.1}" y="{:.1}">{}</text>"#,
            self.py(self.y.1),
            self.py(self.y.0),
            xp + 4.0,
            self.py(self.y.1) + 12.0,
            escape(text)
        );
    }

    /// A point marker at (`x`, `y`), labelled.
    pub fn point(&mut self, x: f64, y: f64, text: &str) {
        let (xp, yp) = (self.px(x), self.py(y));
        // The label reads away from the nearer side, so it stays inside the chart.
        let (lx, anchor) = if xp > WIDTH / 2.0 {
            (xp - 8.0, "end")
        } else {
            (xp + 8.0, "start")
        };
        let _ = write!(
            self.body,
            r#"<circle class="marker" cx="{xp:.1}" cy="{yp:.1}" r="5"><title>{text}</title></circle><text class="marker-label" x="{lx:.1}" y="{ly:.1}" text-anchor="{anchor}">{text}</text>"#,
            text = escape(text),
            ly = yp - 10.0,
        );
    }

    pub fn legend(&mut self, name: &str, class: &'static str) {
        self.legend.push((name.to_owned(), class));
    }

    pub fn finish(self, caption: &str) -> String {
        let mut legend = String::new();
        for (name, class) in &self.legend {
            let _ = write!(
                legend,
                r#"<span class="key {class}"></span>{} "#,
                escape(name)
            );
        }
        format!(
            r#"<figure><svg data-chart="{}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}">{}</svg><figcaption>{} <span class="legend">{legend}</span></figcaption></figure>"#,
            self.name,
            escape(caption),
            self.body,
            escape(caption)
        )
    }
}

fn label(value: f64, domain: (f64, f64)) -> String {
    if domain == (0.0, 1.0) {
        format!("{:.0}%", value * 100.0)
    } else if domain.1 - domain.0 >= 5.0 {
        // Counts.
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_maps_its_domain_onto_the_drawing_area() {
        let plot = Plot::new("t", (0.0, 1.0), (0.0, 1.0));
        assert!((plot.px(0.0) - LEFT).abs() < 1e-9);
        assert!((plot.px(1.0) - (WIDTH - RIGHT)).abs() < 1e-9);
        assert!((plot.py(0.0) - (HEIGHT - BOTTOM)).abs() < 1e-9);
        assert!((plot.py(1.0) - TOP).abs() < 1e-9);
    }

    #[test]
    fn a_chart_names_itself_and_escapes_its_text() {
        let mut plot = Plot::new("risk", (0.0, 1.0), (0.0, 1.0));
        plot.line(&Series {
            name: "<b>".into(),
            points: vec![(0.0, 0.0), (1.0, 1.0)],
            class: "now",
        });
        let svg = plot.finish("a & b");
        assert!(svg.contains(r#"data-chart="risk""#));
        assert!(svg.contains("&lt;b&gt;") && svg.contains("a &amp; b"));
        assert!(!svg.contains("<b>"));
    }
}
