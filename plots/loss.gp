# loss.gp — training loss per recipe: the mean over seeds with its 95%
# confidence band, raw mean faint, validation as markers; beside it (when
# fig_loss.c gives zxlo..zyhi) the last quarter of the steps zoomed, where
# recipes a few hundredths of a nat apart can be told apart. Data and
# variables: fig_loss.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

zoom = exists("zxlo")
set ylabel "training loss (nats/token)"
set xlabel "optimizer step"
if (logx) { set xlabel "optimizer step (log scale)" }
# the key above the plot(s), where no curve can run under it
set key outside top center horizontal maxcols (zoom ? 3 : 2) width -1 font ",8"

# one panel's curves: raw faint, band, smoothed mean, validation markers
curves = "for [i=1:n] datafile index 2*(i-1) using 1:2 with lines lw 0.6 lc rgb faint(word(colors, i)) notitle, \
     for [i=1:n] datafile index 2*(i-1) using 1:4:5 with filledcurves fs transparent solid 0.25 noborder lc rgb word(colors, i) notitle, \
     for [i=1:n] datafile index 2*(i-1) using 1:3 with lines lw 1.2 lc rgb word(colors, i) title word(titles, i) noenhanced, \
     for [i=1:n] datafile index 2*i-1 using 1:2 with points pt 7 ps 0.45 lc rgb word(colors, i) notitle"
# the zoomed panel leaves the raw mean out: its step-to-step noise is wider
# than the differences the panel is there to show
zcurves = "for [i=1:n] datafile index 2*(i-1) using 1:4:5 with filledcurves fs transparent solid 0.25 noborder lc rgb word(colors, i) notitle, \
     for [i=1:n] datafile index 2*(i-1) using 1:3 with lines lw 1.2 lc rgb word(colors, i) notitle, \
     for [i=1:n] datafile index 2*i-1 using 1:2 with points pt 7 ps 0.45 lc rgb word(colors, i) notitle"
keys = "keyentry with points pt 7 ps 0.45 lc rgb '#555555' title (anyval ? 'validation' : ''), \
     keyentry with filledcurves fs transparent solid 0.25 noborder lc rgb '#555555' title (anyband ? '95% CI over seeds' : '')"

if (zoom) {
    # inches: the key's rows above, tic labels and x label below; two panels with a gap
    top_in = 0.66
    set multiplot
    # the key, across both panels: a plot of key entries only, as wide as the figure
    set lmargin at screen 0.02
    set rmargin at screen 0.98
    set tmargin at screen 1 - 0.02/height
    set bmargin at screen 1 - (top_in - 0.04)/height
    unset border
    unset xtics
    unset ytics
    unset grid
    unset xlabel
    unset ylabel
    set xrange [0:1]
    set yrange [0:1]
    set key inside center center horizontal maxrows 2
    # (a keyentry-only plot trips gnuplot: the lines are drawn at y = 2, outside the range)
    plot for [i=1:n] 2 with lines lw 1.2 lc rgb word(colors, i) title word(titles, i) noenhanced, \
         keyentry with points pt 7 ps 0.45 lc rgb '#555555' title (anyval ? 'validation' : ''), \
         keyentry with filledcurves fs transparent solid 0.25 noborder lc rgb '#555555' title (anyband ? '95% CI over seeds' : '')
    unset key
    set border 3 lw 0.8
    set xtics nomirror out scale 0.6
    set ytics nomirror out scale 0.6
    set grid back lc rgb "#e5e5e5" lw 0.6
    set autoscale y
    set ylabel "training loss (nats/token)"
    set xlabel (logx ? "optimizer step (log scale)" : "optimizer step")
    set tmargin at screen 1 - top_in/height
    set bmargin at screen 0.62/height
    set lmargin at screen 0.72/width
    set rmargin at screen 0.72/width + (width - 0.72 - 0.5 - 0.15) * 0.55/width
}
set xrange [xlo:xhi]
if (exists("ylo")) { set yrange [ylo:yhi] }
if (logx) { set logscale x }
if (logy) {
    # a loss spans less than a decade: label 1..9 x 10^k, not just 10^k
    set logscale y
    set ytics format "%g"
    set ytics ()
    do for [e=int(floor(log10(ylo))):int(ceil(log10(yhi)))] {
        do for [m in "1 1.5 2 3 4 5 6 8"] { set ytics add (m*10**e) }
    }
}
set offsets 0, 0, graph 0.04, graph 0.02
if (zoom) {
    # the zoomed window, shaded in the full view
    set object 1 rect from zxlo, graph 0 to zxhi, graph 1 behind fc rgb "#eeeeee" fs solid 1.0 noborder
    set label 1 "zoomed" at zxlo + (zxhi - zxlo)/2, graph 0.97 center font ",7" tc rgb "#777777"
}
if (zoom) { eval "plot ".curves } else { eval "plot ".curves.", ".keys }

if (zoom) {
    unset object 1
    unset label 1
    unset logscale
    unset ylabel
    set ytics auto format "% h"
    set offsets 0, 0, 0, 0
    set lmargin at screen 0.72/width + (width - 0.72 - 0.5 - 0.15) * 0.55/width + 0.5/width
    set rmargin at screen 1 - 0.15/width
    set xrange [zxlo:zxhi]
    set yrange [zylo:zyhi]
    set title "the last quarter, zoomed (smoothed only)" font ",8" offset 0, -0.8
    set xlabel "optimizer step"
    eval "plot ".zcurves
    unset multiplot
}
